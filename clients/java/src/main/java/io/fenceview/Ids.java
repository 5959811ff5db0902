package io.fenceview;

import java.nio.charset.StandardCharsets;

/**
 * The contract's rules for ids and tokens, checked before anything is sent: a
 * breach is the {@link InvalidRequestException} the server would answer.
 */
final class Ids {
    static final int MAX_RESOURCE = 160;
    static final int MAX_HOLDER = 80;

    private Ids() {}

    static String resource(String id) {
        return resource(id, "resource");
    }

    /** id as a resource id given as the request's field (a semaphore's or an election's "name"). */
    static String resource(String id, String field) {
        return check("resource id", field, id, MAX_RESOURCE);
    }

    static String holder(String id) {
        return holder(id, "holder");
    }

    static String holder(String id, String field) {
        return check("holder id", field, id, MAX_HOLDER);
    }

    /** Whether id is a valid resource id (1..160 bytes of UTF-8, no control characters). */
    static boolean validResource(String id) {
        try {
            resource(id);
            return true;
        } catch (InvalidRequestException e) {
            return false;
        }
    }

    private static String check(String what, String field, String id, int max) {
        if (id == null || id.isEmpty()) {
            throw InvalidRequestException.beforeSending(field, what + " is empty");
        }
        int n = 0;
        for (int k = 0; k < id.length(); k++) {
            char c = id.charAt(k);
            if (Character.isISOControl(c)) {
                throw InvalidRequestException.beforeSending(field, what + " contains a control character");
            }
            if (Character.isSurrogate(c)) {
                if (!Character.isHighSurrogate(c) || k + 1 >= id.length() || !Character.isLowSurrogate(id.charAt(k + 1))) {
                    throw InvalidRequestException.beforeSending(field, what + " is not valid UTF-16 (a lone surrogate)");
                }
                k++;
                n += 4;
            } else {
                n += c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
            }
        }
        if (n > max) {
            throw InvalidRequestException.beforeSending(field, what + " is " + n + " bytes of UTF-8; at most " + max + " allowed");
        }
        return id;
    }

    static long token(long token) {
        if (token <= 0) {
            throw InvalidRequestException.beforeSending("invalid-token", "token", "fencing token " + token + ": want a positive 64-bit integer");
        }
        return token;
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}

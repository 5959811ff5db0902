package io.fenceview;

import java.net.http.HttpHeaders;
import java.time.Duration;
import java.util.Map;
import java.util.Set;

/**
 * The one place where a server's error answer becomes an exception: chosen by the
 * answer's {@code code}, never by its English {@code error} text. A server too old to
 * send codes is understood by its status and, for a 409, by what was asked and the
 * answer's fields (a lock-delay's {@code availableAt}, a semaphore's {@code permits}).
 */
final class Refusals {
    private Refusals() {}

    /** What kind of call was refused, which is all a 409 without a code says. */
    enum Op {
        /** acquire, acquire-all, a semaphore's acquire, campaign */
        ACQUIRE,
        /** renew, release, release-all, resign, proclaim */
        OWNERSHIP,
        /** a fence */
        FENCE,
        OTHER
    }

    /** The reasons a guard refuses a token; a refused fence's code is its reason. */
    static final Set<String> FENCE_REASONS = Set.of("stale-token", "superseded", "bad-signature", "unissued-token",
            "foreign-issuer", "scope-mismatch", "shared-token");

    /** The longest Retry-After the client takes from a server: beyond it, the caller's deadline decides. */
    static final Duration MAX_RETRY_AFTER = Duration.ofMinutes(5);

    /**
     * The answer's code: the server's when it sent a well-formed one, otherwise what
     * the status implies (for a 409, given op and, for a semaphore's acquire, the
     * permits asked); null when nothing is implied.
     */
    static String code(int status, Map<String, Object> body, Op op, int askedPermits) {
        String sent = text(body, "code");
        if (sent != null && sent.length() <= 64 && sent.matches("[a-z][a-z0-9-]*")) {
            return sent;
        }
        switch (status) {
            case 400:
                return "invalid-request";
            case 401:
                return "unauthenticated";
            case 403:
                return "forbidden";
            case 404:
                return "not-found";
            case 405:
                return "method-not-allowed";
            case 413:
                return "too-large";
            case 429:
                return "overloaded";
            case 500:
                return "internal";
            case 503:
                return "unavailable";
            case 409:
                break;
            default:
                return null;
        }
        switch (op) {
            case ACQUIRE:
                if (body.get("availableAt") != null) {
                    return "lock-delay";
                }
                if (askedPermits > 0) {
                    Object p = body.get("permits");
                    return p instanceof Long && (Long) p != askedPermits ? "permits-mismatch" : "no-permit";
                }
                return "lock-held";
            case FENCE:
                String reason = text(body, "reason");
                return reason != null && FENCE_REASONS.contains(reason) ? reason : Decision.STALE_TOKEN;
            default:
                return null; // an old server's refused release: not-owner, not-held or lease-expired, unknown which
        }
    }

    /** Whether an acquire's refusal means "held now": wait, or answer null. */
    static boolean busy(FenceviewClient.Answer a, int askedPermits) {
        if (a.status != 409) {
            return false;
        }
        String c = code(a.status, a.body, Op.ACQUIRE, askedPermits);
        return "lock-held".equals(c) || "lock-delay".equals(c) || "no-permit".equals(c);
    }

    /**
     * The exception for an error answer to a call on resource (a lock, a semaphore, an
     * election; null for none), what being the call for the message.
     */
    static RuntimeException exception(FenceviewClient.Answer a, Op op, int askedPermits, String resource, String what) {
        String code = code(a.status, a.body, op, askedPermits);
        String msg = "fenceview: " + what + ": " + a.status + (code != null ? " " + code : "") + ": " + a.error();
        if (code == null) {
            if (a.status == 409 && op == Op.OWNERSHIP) {
                return new LockOwnershipException(resource, null, msg);
            }
            return new FenceviewException(a.status, null, msg);
        }
        if (FENCE_REASONS.contains(code)) {
            return new FencedOutException(resource, new Decision(false, code, num(a.body, "presented"), num(a.body, "required")));
        }
        switch (code) {
            case "lock-held":
            case "no-permit":
                return new LockHeldException(a.body, code, msg);
            case "lock-delay":
                return new LockDelayException(resource, a.body);
            case "lease-expired":
                return new LeaseExpiredException(resource, msg);
            case "not-owner":
                return new NotOwnerException(resource, msg);
            case "not-held":
                return new NotHeldException(resource, msg);
            case "not-leader":
                return new NotLeaderException(resource, msg);
            case "permits-mismatch":
                return new PermitsMismatchException((int) Math.max(0, Math.min(Integer.MAX_VALUE, num(a.body, "permits"))), msg);
            case "overloaded":
            case "limit":
                return new OverloadedException(a.status, code, retryAfter(a.body, a.headers), msg);
            case "invalid-request":
            case "unknown-field":
            case "invalid-token":
            case "too-large":
                return new InvalidRequestException(a.status, code, text(a.body, "field"), msg);
            case "unauthenticated":
            case "forbidden":
                return new AccessDeniedException(a.status, code, msg);
            case "not-found":
                return new NotFoundException(msg);
            default:
                return new FenceviewException(a.status, code, msg);
        }
    }

    /**
     * The exception of an acquire's last "held now" refusal (see {@link #busy}), for
     * the methods that say why they did not acquire.
     */
    static LockHeldException held(FenceviewClient.Answer a, int askedPermits, String resource) {
        RuntimeException e = exception(a, Op.ACQUIRE, askedPermits, resource, "acquire " + resource);
        if (e instanceof LockHeldException) {
            return (LockHeldException) e;
        }
        throw e;
    }

    /**
     * The wait a refusal asks for: {@code retryAfterMs} in the body, else the
     * {@code Retry-After} header in seconds; at most {@link #MAX_RETRY_AFTER}, null
     * when neither is there (or is well-formed).
     */
    static Duration retryAfter(Map<String, Object> body, HttpHeaders headers) {
        long ms = -1;
        if (body.get("retryAfterMs") instanceof Long) {
            ms = (Long) body.get("retryAfterMs");
        } else if (headers != null) {
            String h = headers.firstValue("Retry-After").orElse("").trim();
            if (!h.isEmpty() && h.length() <= 9 && h.chars().allMatch(ch -> ch >= '0' && ch <= '9')) {
                ms = Long.parseLong(h) * 1000;
            }
        }
        if (ms < 0) {
            return null;
        }
        return Duration.ofMillis(Math.min(ms, MAX_RETRY_AFTER.toMillis()));
    }

    private static String text(Map<String, Object> body, String key) {
        Object v = body.get(key);
        return v instanceof String ? (String) v : null;
    }

    private static long num(Map<String, Object> body, String key) {
        Object v = body.get(key);
        return v instanceof Long ? (Long) v : 0;
    }
}

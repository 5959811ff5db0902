package io.fenceview;

import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.X509EncodedKeySpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * Verifies fenceview's signed tokens offline, with the JDK's own Ed25519.
 *
 * <p>A signature is Ed25519 over the UTF-8 bytes of {@code fenceview/v1 <resourceId>
 * <token>}, in base64url without padding (86 characters). Only that exact text is
 * accepted: padding, the {@code +/} alphabet, another length or non-zero unused bits
 * are refused before any key is tried.
 *
 * <p>{@link #fetch(FenceviewClient)} takes the keys from the server's public
 * {@code /v1/signing-keys}. When a signature matches none of them and the keys are
 * older than the refresh interval (default 30 s), they are fetched again once, so
 * a key the server rotated in is picked up and one it removed stops verifying; the
 * interval stops a stream of forgeries from becoming a stream of key fetches.
 * Instances are safe for concurrent use.
 */
public final class TokenVerifier {
    /** The bytes that turn a raw 32-byte Ed25519 key into an X.509 SubjectPublicKeyInfo (RFC 8410). */
    private static final byte[] X509_PREFIX = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};
    static final int SIGNATURE_TEXT = 86;
    static final int KEY_TEXT = 43;

    private final FenceviewClient client; // null: a fixed set of keys
    private final Duration refreshInterval;
    private volatile List<PublicKey> keys;
    private volatile String issuer = "";
    private volatile long fetchedAt;

    private TokenVerifier(FenceviewClient client, Duration refreshInterval, List<PublicKey> keys) {
        this.client = client;
        this.refreshInterval = refreshInterval;
        this.keys = keys;
        this.fetchedAt = System.nanoTime();
    }

    /** A verifier trusting the server's signing keys, fetched now. */
    public static TokenVerifier fetch(FenceviewClient client) {
        return fetch(client, Duration.ofSeconds(30));
    }

    /** The same, refreshing the keys at most once per refreshInterval on an unknown signature. */
    public static TokenVerifier fetch(FenceviewClient client, Duration refreshInterval) {
        TokenVerifier v = new TokenVerifier(client, refreshInterval, Collections.emptyList());
        v.refresh();
        return v;
    }

    /** A verifier trusting exactly these public keys (base64url of 32 bytes each), never refreshed. */
    public static TokenVerifier of(String... publicKeys) {
        List<PublicKey> ks = new ArrayList<>();
        for (String k : publicKeys) {
            ks.add(publicKey(k));
        }
        return new TokenVerifier(null, Duration.ZERO, Collections.unmodifiableList(ks));
    }

    /** Fetches the server's keys now (every one is tried, so their order does not matter). */
    public void refresh() {
        if (client == null) {
            return;
        }
        Map<String, Object> b = client.signingKeys();
        List<PublicKey> ks = new ArrayList<>();
        for (Object o : Json.list(b, "keys")) {
            if (!(o instanceof Map)) {
                throw new IllegalArgumentException("fenceview: signing keys: an entry is not an object");
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> k = (Map<String, Object>) o;
            if (!"Ed25519".equals(Json.str(k, "alg"))) {
                continue; // an algorithm this verifier does not know cannot vouch for anything
            }
            ks.add(publicKey(Json.str(k, "publicKey")));
        }
        keys = Collections.unmodifiableList(ks);
        String iss = Json.str(b, "issuer");
        issuer = iss == null ? "" : iss;
        fetchedAt = System.nanoTime();
    }

    /** The issuer id of the server the keys came from ("" for a fixed set). */
    public String issuer() {
        return issuer;
    }

    /** How many keys are trusted now. */
    public int keyCount() {
        return keys.size();
    }

    /** Whether the token carries a valid signature of a trusted key for its resource and number. */
    public boolean verify(FencingToken t) {
        return verify(t.resource(), t.number(), t.signature());
    }

    /** Whether signature is a trusted key's signature of token on resource. */
    public boolean verify(String resource, long token, String signature) {
        if (!Ids.validResource(resource) || token <= 0) {
            return false;
        }
        byte[] sig = decode(signature, SIGNATURE_TEXT);
        if (sig == null) {
            return false;
        }
        byte[] msg = Ids.utf8("fenceview/v1 " + resource + " " + token);
        if (anyVerifies(keys, msg, sig)) {
            return true;
        }
        if (client != null && System.nanoTime() - fetchedAt >= refreshInterval.toNanos()) {
            synchronized (this) {
                if (System.nanoTime() - fetchedAt >= refreshInterval.toNanos()) {
                    try {
                        refresh();
                    } catch (RuntimeException e) {
                        // The server is away: keep the keys we have, and do not
                        // ask again before the interval is over.
                        fetchedAt = System.nanoTime();
                        return false;
                    }
                }
            }
            return anyVerifies(keys, msg, sig);
        }
        return false;
    }

    private static boolean anyVerifies(List<PublicKey> ks, byte[] msg, byte[] sig) {
        for (PublicKey k : ks) {
            try {
                Signature s = Signature.getInstance("Ed25519");
                s.initVerify(k);
                s.update(msg);
                if (s.verify(sig)) {
                    return true;
                }
            } catch (GeneralSecurityException e) {
                // A malformed signature (say, a non-canonical point) is just not valid.
            }
        }
        return false;
    }

    /** Decodes base64url without padding of exactly len characters; null for anything else. */
    static byte[] decode(String text, int len) {
        if (text == null || text.length() != len) {
            return null;
        }
        for (int k = 0; k < len; k++) {
            char c = text.charAt(k);
            if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) {
                return null;
            }
        }
        byte[] raw;
        try {
            raw = Base64.getUrlDecoder().decode(text);
        } catch (IllegalArgumentException e) {
            return null;
        }
        // The JDK's decoder ignores unused low bits; the format does not allow them.
        if (!Base64.getUrlEncoder().withoutPadding().encodeToString(raw).equals(text)) {
            return null;
        }
        return raw;
    }

    static PublicKey publicKey(String text) {
        byte[] raw = decode(text, KEY_TEXT);
        if (raw == null || raw.length != 32) {
            throw new IllegalArgumentException("fenceview: signing key " + text + ": want base64url of 32 bytes");
        }
        byte[] der = Arrays.copyOf(X509_PREFIX, X509_PREFIX.length + 32);
        System.arraycopy(raw, 0, der, X509_PREFIX.length, 32);
        try {
            return KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(der));
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("fenceview: signing key " + text + ": " + e.getMessage(), e);
        }
    }
}

package io.fenceview;

import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.X509EncodedKeySpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Verifies fenceview's signed tokens offline, with the JDK's own Ed25519.
 *
 * <p>A token's signature (its carrier, base64url without padding) is one of two forms:
 * <ul>
 * <li>64 bytes (86 characters): Ed25519 over the UTF-8 bytes of
 * {@code fenceview/v1 <resourceId> <token>};
 * <li>a batch signature: {@code 0x02 || signature (64) || index (u32be) || size (u32be)
 * || audit path (32 bytes a hash)}. The token's message is leaf {@code index} of an
 * RFC 9162 Merkle tree of {@code size} leaves (leaf hash {@code SHA-256(0x00 ||
 * message)}, node hash {@code SHA-256(0x01 || left || right)}); the path leads from it
 * to the root, and the key signed {@code fenceview/batch/v2 <size> <root in lowercase
 * hex>}. The verifier recomputes the root (a path of the wrong length is refused) and
 * checks the signature over it. Verified roots are remembered by size, root and
 * signature (at most {@link #ROOT_CACHE} of them), so the tokens of one batch cost one
 * Ed25519 verification between them. Carriers of version {@code 0x01}, whose signature
 * did not cover the size (so the size could be rewritten), are refused.
 * </ul>
 * A shared grant's (a reader's) message ends in {@code " shared"}: {@code fenceview/v1
 * <resourceId> <token> shared}, so a reader's token never verifies as a writer's.
 * {@link #verify} checks an exclusive grant, {@link #verifyShared} a shared one, and
 * {@link #mode} tells which a signature proves.
 * Only that exact text is accepted: padding, the {@code +/} alphabet, another length
 * or non-zero unused bits are refused before any key is tried.
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
    /** The first byte of a batch carrier. */
    static final byte BATCH_TAG = 0x02;
    /** The bytes of a batch carrier before its path: 0x02, signature, index, size. */
    static final int BATCH_HEADER = 1 + 64 + 4 + 4;
    /** A tree of at most 2^32 - 1 leaves has paths of at most 32 hashes. */
    static final int MAX_PATH = 32;
    /** The longest carrier text: a batch carrier with the longest path. */
    static final int MAX_CARRIER_TEXT = ((BATCH_HEADER + 32 * MAX_PATH) * 4 + 2) / 3;
    /** How many verified (root, signature) pairs are remembered. */
    public static final int ROOT_CACHE = 4096;

    private final FenceviewClient client; // null: a fixed set of keys
    private final Duration refreshInterval;
    private volatile List<PublicKey> keys;
    private volatile String issuer = "";
    private volatile long fetchedAt;
    /** Verified batch roots with their signatures, most recently used last; guarded by itself. */
    private final Map<String, Boolean> roots = new LinkedHashMap<>(64, 0.75f, true) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
            return size() > ROOT_CACHE;
        }
    };

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
        synchronized (roots) {
            roots.clear(); // a removed key's roots must stop verifying
        }
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

    /** What a signature proves of a token: an exclusive (writer's) grant, a shared (reader's) one, or neither. */
    public enum Mode {
        EXCLUSIVE, SHARED, UNSIGNED
    }

    /** Whether the token carries a valid signature of a trusted key for its resource, number and mode. */
    public boolean verify(FencingToken t) {
        return verifyGrant(t.resource(), t.number(), t.shared(), t.signature());
    }

    /** Whether signature (a carrier of either form) is a trusted key's signature of an exclusive grant of token on resource. */
    public boolean verify(String resource, long token, String signature) {
        return verifyGrant(resource, token, false, signature);
    }

    /** {@link #verify(String, long, String)} for a shared grant (a reader's). */
    public boolean verifyShared(String resource, long token, String signature) {
        return verifyGrant(resource, token, true, signature);
    }

    /**
     * What signature proves of token on resource; read says which mode to try first (a
     * read's token is usually a reader's).
     */
    public Mode mode(String resource, long token, String signature, boolean read) {
        boolean first = read;
        if (verifyGrant(resource, token, first, signature)) {
            return first ? Mode.SHARED : Mode.EXCLUSIVE;
        }
        if (decodeCarrier(signature) != null && verifyGrant(resource, token, !first, signature)) {
            return first ? Mode.EXCLUSIVE : Mode.SHARED;
        }
        return Mode.UNSIGNED;
    }

    /** The message a grant's signature covers: {@code fenceview/v1 <resource> <token>}, and {@code " shared"} for a reader's. */
    static byte[] grantMessage(String resource, long token, boolean shared) {
        return Ids.utf8("fenceview/v1 " + resource + " " + token + (shared ? " shared" : ""));
    }

    /** The message a batch's key signs: {@code fenceview/batch/v2 <size> <root in lowercase hex>}. */
    static byte[] rootMessage(long size, byte[] root) {
        return Ids.utf8("fenceview/batch/v2 " + size + " " + hex(root));
    }

    /** Whether signature is a trusted key's signature of a grant of token on resource, shared or exclusive. */
    public boolean verifyGrant(String resource, long token, boolean shared, String signature) {
        if (!Ids.validResource(resource) || token <= 0) {
            return false;
        }
        byte[] raw = decodeCarrier(signature);
        if (raw == null) {
            return false;
        }
        byte[] leafMsg = grantMessage(resource, token, shared);
        byte[] msg;
        byte[] sig;
        String cacheKey = null;
        if (raw.length == 64) {
            msg = leafMsg;
            sig = raw;
        } else {
            byte[] root = batchRoot(raw, leafMsg);
            if (root == null) {
                return false;
            }
            sig = Arrays.copyOfRange(raw, 1, 65);
            long size = u32(raw, 69);
            msg = rootMessage(size, root);
            // The size is part of what was signed: a root verified for one size says
            // nothing of another.
            cacheKey = size + " " + hex(root) + " " + Base64.getEncoder().encodeToString(sig);
            synchronized (roots) {
                if (roots.get(cacheKey) != null) {
                    return true;
                }
            }
        }
        boolean ok = anyVerifies(keys, msg, sig);
        if (!ok && client != null && System.nanoTime() - fetchedAt >= refreshInterval.toNanos()) {
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
            ok = anyVerifies(keys, msg, sig);
        }
        if (ok && cacheKey != null) {
            synchronized (roots) {
                roots.put(cacheKey, Boolean.TRUE);
            }
        }
        return ok;
    }

    /**
     * The root a batch carrier's path leads to from the leaf message, per RFC 9162
     * section 2.1.3.2; null when the carrier is malformed or its path has the wrong
     * length for its index and size.
     */
    static byte[] batchRoot(byte[] raw, byte[] leafMsg) {
        if (raw.length < BATCH_HEADER || raw[0] != BATCH_TAG || (raw.length - BATCH_HEADER) % 32 != 0) {
            return null;
        }
        long index = u32(raw, 65);
        long size = u32(raw, 69);
        int hashes = (raw.length - BATCH_HEADER) / 32;
        if (size == 0 || index >= size || hashes > MAX_PATH) {
            return null;
        }
        MessageDigest sha = sha256();
        sha.update((byte) 0x00);
        byte[] r = sha.digest(leafMsg);
        long fn = index;
        long sn = size - 1;
        for (int k = 0; k < hashes; k++) {
            if (sn == 0) {
                return null; // a path longer than the tree is high
            }
            int off = BATCH_HEADER + 32 * k;
            sha.update((byte) 0x01);
            if ((fn & 1) == 1 || fn == sn) {
                sha.update(raw, off, 32);
                sha.update(r);
                r = sha.digest();
                if ((fn & 1) == 0) {
                    while ((fn & 1) == 0 && fn != 0) {
                        fn >>= 1;
                        sn >>= 1;
                    }
                }
            } else {
                sha.update(r);
                sha.update(raw, off, 32);
                r = sha.digest();
            }
            fn >>= 1;
            sn >>= 1;
        }
        return sn == 0 ? r : null; // sn > 0: a path one hash short (or more)
    }

    private static long u32(byte[] b, int off) {
        return ((b[off] & 0xffL) << 24) | ((b[off + 1] & 0xffL) << 16) | ((b[off + 2] & 0xffL) << 8) | (b[off + 3] & 0xffL);
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    }

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder(b.length * 2);
        for (byte x : b) {
            s.append(Character.forDigit((x >> 4) & 15, 16)).append(Character.forDigit(x & 15, 16));
        }
        return s.toString();
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

    /**
     * Decodes a carrier: base64url without padding, in canonical form, of 64 bytes or
     * of a batch carrier's length; null for anything else.
     */
    static byte[] decodeCarrier(String text) {
        if (text == null || text.length() < SIGNATURE_TEXT || text.length() > MAX_CARRIER_TEXT) {
            return null;
        }
        byte[] raw = decode(text, text.length());
        if (raw == null || (raw.length != 64 && raw.length < BATCH_HEADER)) {
            return null;
        }
        return raw;
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

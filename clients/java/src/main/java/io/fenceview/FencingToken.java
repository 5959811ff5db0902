package io.fenceview;

import java.net.http.HttpRequest;
import java.util.Map;

/**
 * A grant's fencing token with its proof: the number a guard compares, the server's
 * Ed25519 signature of {@code fenceview/v1 <resourceId> <number>} (base64url, no
 * padding) and the id of the key that made it, plus the issuer and scope the token
 * belongs to. Pass it to every write made under the lock.
 *
 * @param resource  the lock's resource id
 * @param number    the number a guard compares
 * @param signature the signature text, "" when the server sent none
 * @param keyId     the id of the key that signed it, "" when unsigned
 * @param issuer    the issuer the token belongs to, "" when not named
 * @param scope     the scope the token belongs to, "" when not named
 * @param shared    a shared grant's token (a reader's, of {@link FencedReadWriteLock#readLock()}):
 *                  its signature covers {@code fenceview/v1 <resourceId> <number> shared}, and
 *                  it is presented for reads only ({@code X-Fencing-Access: read})
 */
public record FencingToken(String resource, long number, String signature, String keyId, String issuer, String scope,
        boolean shared) {
    /** The header carrying the number. */
    public static final String TOKEN_HEADER = "X-Fencing-Token";
    /** The header carrying the signature. */
    public static final String SIGNATURE_HEADER = "X-Fencing-Signature";
    /** The header saying what a fenced request does: {@code read}, or {@code write} (the default). */
    public static final String ACCESS_HEADER = "X-Fencing-Access";

    /** An exclusive grant's token (a writer's). */
    public FencingToken(String resource, long number, String signature, String keyId, String issuer, String scope) {
        this(resource, number, signature, keyId, issuer, scope, false);
    }

    public FencingToken {
        resource = Ids.resource(resource);
        number = Ids.token(number);
        signature = signature == null ? "" : signature;
        keyId = keyId == null ? "" : keyId;
        issuer = issuer == null ? "" : issuer;
        scope = scope == null ? "" : scope;
    }

    /** The token of a grant of resource: the grant's "fencing" object. */
    static FencingToken ofGrant(String resource, Map<String, Object> grant) {
        Map<String, Object> f = Json.obj(grant, "fencing");
        return new FencingToken(resource, Json.lng(f, "token"), Json.str(f, "signature"), Json.str(f, "keyId"),
                Json.str(f, "issuer"), Json.str(f, "scope"), Json.bool(f, "shared") || Json.bool(grant, "shared"));
    }

    /**
     * Adds {@code X-Fencing-Token} and, when signed, {@code X-Fencing-Signature} to a
     * request; a shared grant's token also {@code X-Fencing-Access: read}.
     */
    public HttpRequest.Builder addTo(HttpRequest.Builder b) {
        b.setHeader(TOKEN_HEADER, Long.toString(number));
        if (!signature.isEmpty()) {
            b.setHeader(SIGNATURE_HEADER, signature);
        }
        if (shared) {
            b.setHeader(ACCESS_HEADER, "read");
        }
        return b;
    }

    /** The two header lines, as a holder would send them. */
    @Override
    public String toString() {
        return TOKEN_HEADER + ": " + number + (signature.isEmpty() ? "" : "\n" + SIGNATURE_HEADER + ": " + signature);
    }
}

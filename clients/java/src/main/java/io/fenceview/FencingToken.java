package io.fenceview;

import java.net.http.HttpRequest;
import java.util.Map;
import java.util.Objects;

/**
 * A grant's fencing token with its proof: the number a guard compares, the server's
 * Ed25519 signature of {@code fenceview/v1 <resourceId> <number>} (base64url, no
 * padding) and the id of the key that made it, plus the issuer and scope the token
 * belongs to. Pass it to every write made under the lock.
 */
public final class FencingToken {
    /** The header carrying the number. */
    public static final String TOKEN_HEADER = "X-Fencing-Token";
    /** The header carrying the signature. */
    public static final String SIGNATURE_HEADER = "X-Fencing-Signature";

    private final String resource;
    private final long number;
    private final String signature;
    private final String keyId;
    private final String issuer;
    private final String scope;

    public FencingToken(String resource, long number, String signature, String keyId, String issuer, String scope) {
        this.resource = Ids.resource(resource);
        this.number = Ids.token(number);
        this.signature = signature == null ? "" : signature;
        this.keyId = keyId == null ? "" : keyId;
        this.issuer = issuer == null ? "" : issuer;
        this.scope = scope == null ? "" : scope;
    }

    /** The token of a grant of resource: the grant's "fencing" object. */
    static FencingToken ofGrant(String resource, Map<String, Object> grant) {
        Map<String, Object> f = Json.obj(grant, "fencing");
        return new FencingToken(resource, Json.lng(f, "token"), Json.str(f, "signature"), Json.str(f, "keyId"),
                Json.str(f, "issuer"), Json.str(f, "scope"));
    }

    public String resource() {
        return resource;
    }

    public long number() {
        return number;
    }

    /** The signature text, "" when the server sent none. */
    public String signature() {
        return signature;
    }

    public String keyId() {
        return keyId;
    }

    public String issuer() {
        return issuer;
    }

    public String scope() {
        return scope;
    }

    /** Adds {@code X-Fencing-Token} and, when signed, {@code X-Fencing-Signature} to a request. */
    public HttpRequest.Builder addTo(HttpRequest.Builder b) {
        b.setHeader(TOKEN_HEADER, Long.toString(number));
        if (!signature.isEmpty()) {
            b.setHeader(SIGNATURE_HEADER, signature);
        }
        return b;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof FencingToken)) {
            return false;
        }
        FencingToken t = (FencingToken) o;
        return number == t.number && resource.equals(t.resource) && signature.equals(t.signature)
                && keyId.equals(t.keyId) && issuer.equals(t.issuer) && scope.equals(t.scope);
    }

    @Override
    public int hashCode() {
        return Objects.hash(resource, number, signature);
    }

    /** The two header lines, as a holder would send them. */
    @Override
    public String toString() {
        return TOKEN_HEADER + ": " + number + (signature.isEmpty() ? "" : "\n" + SIGNATURE_HEADER + ": " + signature);
    }
}

package io.fenceview;

import com.sun.net.httpserver.Filter;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.OutputStream;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The service side of {@link FencedHttp}, for the JDK's {@code com.sun.net.httpserver}:
 * a filter that checks each request's fencing token against the resource's high-water
 * mark before the handler runs. A token at least the mark is accepted (and becomes the
 * mark, atomically); a lower one gets 409 with {@code X-Required-Token} and
 * {@code {"accepted":false,"reason","presented","required"}}; a missing or malformed
 * token or resource id gets 400. A token without a valid signature (from the server's
 * published keys, or a {@link TokenVerifier}'s) is refused with {@code bad-signature}
 * and never raises the mark, so a forged {@code X-Fencing-Token: 99} cannot lock the
 * honest holder out. Only {@link #acceptingUnsignedTokens()} takes bare numbers.
 *
 * <p>GET and HEAD are reads, other methods writes, unless {@code X-Fencing-Access} says
 * {@code read} or {@code write}. The rule is the same for both; a write presented with
 * a shared lock's token (a reader's) is refused {@code shared-token}.
 *
 * <p>Marks live in memory, for at most {@code maxResources} resources (then 503): seed
 * them from your store after a restart with {@link #seed}. The accepted token is left
 * in the exchange's attribute {@value #TOKEN_ATTRIBUTE} for the handler.
 */
public final class FencingFilter extends Filter {
    public static final String TOKEN_ATTRIBUTE = "io.fenceview.token";

    private final ConcurrentHashMap<String, Long> marks = new ConcurrentHashMap<>();
    /** The resources a filter keeps marks for unless told otherwise. */
    public static final int DEFAULT_MAX_RESOURCES = 100_000;

    private final TokenVerifier verifier; // null: unsigned tokens accepted
    private final int maxResources;

    /**
     * A filter that accepts only tokens signed by client's server: its signing keys are
     * fetched now ({@code GET /v1/signing-keys}) and again when a signature names a key
     * it does not know yet (see {@link TokenVerifier#fetch(FenceviewClient)}).
     */
    public FencingFilter(FenceviewClient client) {
        this(client, DEFAULT_MAX_RESOURCES);
    }

    public FencingFilter(FenceviewClient client, int maxResources) {
        this(TokenVerifier.fetch(Objects.requireNonNull(client, "client")), maxResources);
    }

    /** A filter that accepts only tokens verifier vouches for. */
    public FencingFilter(TokenVerifier verifier, int maxResources) {
        this(maxResources, Objects.requireNonNull(verifier, "verifier"));
    }

    private FencingFilter(int maxResources, TokenVerifier verifier) {
        if (maxResources < 1) {
            throw new IllegalArgumentException("fenceview: maxResources must be positive");
        }
        this.verifier = verifier;
        this.maxResources = maxResources;
    }

    /**
     * A filter that takes any well-formed token number, signed or not: anyone who can
     * reach the service can present a high number and lock the real holder out. For
     * tokens from a server that does not sign, or a test.
     */
    public static FencingFilter acceptingUnsignedTokens() {
        return acceptingUnsignedTokens(DEFAULT_MAX_RESOURCES);
    }

    public static FencingFilter acceptingUnsignedTokens(int maxResources) {
        return new FencingFilter(maxResources, null);
    }

    /** Whether the filter refuses tokens without a valid signature (all but {@link #acceptingUnsignedTokens()}). */
    public boolean verifiesSignatures() {
        return verifier != null;
    }

    @Override
    public String description() {
        return "fenceview fencing-token guard";
    }

    /** The resource's mark, 0 when none. */
    public long highWaterMark(String resource) {
        return marks.getOrDefault(resource, 0L);
    }

    /** Raises the resource's mark to at least token without a decision (restoring after a restart). */
    public void seed(String resource, long token) {
        marks.merge(Ids.resource(resource), Ids.token(token), Math::max);
    }

    @Override
    public void doFilter(HttpExchange ex, Chain chain) throws IOException {
        String resource = ex.getRequestHeaders().getFirst(FencedHttp.RESOURCE_HEADER);
        String text = ex.getRequestHeaders().getFirst(FencingToken.TOKEN_HEADER);
        long token = parseToken(text);
        if (resource == null || !Ids.validResource(resource) || token <= 0) {
            ex.getRequestBody().close();
            send(ex, 400, Map.of("error", "missing or invalid fencing token or resource id"), null);
            return;
        }
        Boolean read = readOf(ex);
        if (read == null) {
            ex.getRequestBody().close();
            send(ex, 400, Map.of("error", FencingToken.ACCESS_HEADER + " must be read or write", "code", "invalid-request"), null);
            return;
        }
        if (verifier != null) {
            TokenVerifier.Mode m = verifier.mode(resource, token, ex.getRequestHeaders().getFirst(FencingToken.SIGNATURE_HEADER), read);
            if (m == TokenVerifier.Mode.UNSIGNED || (m == TokenVerifier.Mode.SHARED && !read)) {
                String reason = m == TokenVerifier.Mode.UNSIGNED ? Decision.BAD_SIGNATURE : Decision.SHARED_TOKEN;
                refuse(ex, new Decision(false, reason, token, highWaterMark(resource)), false);
                return;
            }
        }
        if (!marks.containsKey(resource) && marks.size() >= maxResources) {
            send(ex, 503, Map.of("error", "too many fenced resources"), null);
            return;
        }
        long[] required = {0};
        marks.compute(resource, (k, mark) -> {
            if (mark != null && token < mark) {
                required[0] = mark;
                return mark;
            }
            return token;
        });
        if (required[0] > 0) {
            refuse(ex, Decision.stale(token, required[0]), true);
            return;
        }
        ex.setAttribute(TOKEN_ATTRIBUTE, token);
        chain.doFilter(ex);
    }

    /**
     * Whether the request is a read: its {@code X-Fencing-Access} ({@code read} or
     * {@code write}), else GET and HEAD are reads and other methods writes; null for
     * another value or more than one. A read follows the same rule as a write (a shared
     * lock's reader may make it); a write refuses a shared grant's token.
     */
    static Boolean readOf(HttpExchange ex) {
        java.util.List<String> all = ex.getRequestHeaders().get(FencingToken.ACCESS_HEADER);
        if (all == null || all.isEmpty()) {
            String m = ex.getRequestMethod();
            return "GET".equals(m) || "HEAD".equals(m);
        }
        if (all.size() != 1) {
            return null;
        }
        String v = all.get(0).strip().toLowerCase(java.util.Locale.ROOT);
        return v.equals("read") ? Boolean.TRUE : v.equals("write") ? Boolean.FALSE : null;
    }

    /** A token is a positive decimal integer, nothing else (no sign, no spaces, no leading zeros). */
    static long parseToken(String s) {
        if (s == null || s.isEmpty() || s.length() > 19 || s.charAt(0) < '1' || s.charAt(0) > '9') {
            return 0;
        }
        long v = 0;
        for (int k = 0; k < s.length(); k++) {
            char c = s.charAt(k);
            if (c < '0' || c > '9') {
                return 0;
            }
            if (v > (Long.MAX_VALUE - (c - '0')) / 10) {
                return 0;
            }
            v = v * 10 + (c - '0');
        }
        return v;
    }

    private static void refuse(HttpExchange ex, Decision d, boolean withHeader) throws IOException {
        ex.getRequestBody().close();
        Map<String, Object> b = new LinkedHashMap<>();
        b.put("accepted", false);
        b.put("reason", d.reason());
        b.put("presented", d.presented());
        b.put("required", d.required());
        send(ex, 409, b, withHeader ? Long.toString(d.required()) : null);
    }

    private static void send(HttpExchange ex, int status, Map<String, ?> body, String required) throws IOException {
        byte[] out = Ids.utf8(Json.write(body));
        ex.getResponseHeaders().set("Content-Type", "application/json");
        if (required != null) {
            ex.getResponseHeaders().set(FencedHttp.REQUIRED_HEADER, required);
        }
        ex.sendResponseHeaders(status, out.length);
        try (OutputStream o = ex.getResponseBody()) {
            o.write(out);
        }
    }
}

package io.fenceview;

import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Optional;

/**
 * Calls a fenced HTTP service: the request carries {@code X-Fencing-Token},
 * {@code X-Fencing-Signature} (when signed) and {@code X-Resource-Id}, and a 409 answer
 * is read as the service's refusal of the token, not as an error.
 *
 * <pre>{@code
 * FencedHttp.Result<String> r = FencedHttp.send(http,
 *         HttpRequest.newBuilder(uri).POST(BodyPublishers.ofString(body)),
 *         lock.getFencingToken(), BodyHandlers.ofString());
 * if (!r.accepted()) throw r.decision().toException(resource); // fenced out: stop
 * }</pre>
 */
public final class FencedHttp {
    /** The header naming the resource a token is for. */
    public static final String RESOURCE_HEADER = "X-Resource-Id";
    /** The header of a refusal carrying the token that would have been accepted. */
    public static final String REQUIRED_HEADER = "X-Required-Token";

    private FencedHttp() {}

    /**
     * The answer to a fenced call.
     *
     * @param decision accepted (any status but 409), or the service's refusal
     * @param response the response, refusals included
     */
    public record Result<T>(Decision decision, HttpResponse<T> response) {
        public boolean accepted() {
            return decision.accepted();
        }
    }

    /** Sends the request with the token's headers and reads a 409 as a refusal. */
    public static <T> Result<T> send(HttpClient http, HttpRequest.Builder request, FencingToken token,
            HttpResponse.BodyHandler<T> body) throws IOException, InterruptedException {
        token.addTo(request);
        request.setHeader(RESOURCE_HEADER, token.resource());
        HttpResponse<T> resp = http.send(request.build(), body);
        if (resp.statusCode() != 409) {
            return new Result<>(Decision.accept(token.number()), resp);
        }
        return new Result<>(refusal(token.number(), resp.headers().firstValue(REQUIRED_HEADER),
                resp.body() instanceof String ? (String) resp.body() : null), resp);
    }

    /** A 409's decision: the required token from the header, else from a JSON body. */
    static Decision refusal(long presented, Optional<String> requiredHeader, String body) {
        long required = 0;
        String reason = Decision.STALE_TOKEN;
        if (requiredHeader.isPresent()) {
            try {
                required = Long.parseLong(requiredHeader.get().strip());
            } catch (NumberFormatException e) {
                required = 0; // a malformed header says nothing; the refusal stands
            }
        }
        if (body != null && !body.isBlank()) {
            try {
                var m = Json.parseObject(body);
                String r = Json.str(m, "reason");
                if (r != null && !r.isEmpty()) {
                    reason = r;
                }
                if (required == 0 && m.get("required") instanceof Long) {
                    required = (Long) m.get("required");
                }
            } catch (IllegalArgumentException e) {
                // Not JSON: a bare 409 is still a refusal.
            }
        }
        return new Decision(false, reason, presented, Math.max(required, 0));
    }
}

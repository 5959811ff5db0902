package io.fenceview;

import java.time.Instant;
import java.util.Map;

/**
 * A lock as the server saw it when it answered {@code GET /v1/locks/{resource}}.
 *
 * @param resource    the resource id
 * @param locked      whether a live lease holds it
 * @param holder      the holder id, null when free
 * @param holdCount   re-entrant grants of the current hold, 0 when free
 * @param token       the last token issued for the resource (0 if none), held or not
 * @param remainingMs the lease left, 0 when free
 * @param availableAt when a running lock-delay ends; null when none runs
 */
public record LockState(String resource, boolean locked, String holder, int holdCount, long token, long remainingMs,
        Instant availableAt) {
    static LockState of(Map<String, Object> b) {
        return new LockState(Json.str(b, "resourceId"), Json.bool(b, "locked"), Json.str(b, "holder"),
                (int) Json.lng(b, "holdCount"), Json.lng(b, "token"), Json.lng(b, "remainingMs"),
                Json.instant(b, "availableAt"));
    }
}

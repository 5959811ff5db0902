package io.fenceview;

import java.time.Instant;
import java.util.Map;

/**
 * An election's leader: the holder of the election's lock, whose token is the term.
 *
 * @param candidate the leader's candidate id
 * @param value     the value it proclaimed (at most 4 KiB)
 * @param term      its term: the lock's token, with which it fences its writes
 * @param since     when the term began
 * @param expiresAt when its lease runs out unless renewed; null when an observer
 *                  learned of the leader from the event stream
 */
public record Leader(String candidate, String value, long term, Instant since, Instant expiresAt) {
    static Leader of(Map<String, Object> b) {
        return new Leader(Json.str(b, "candidate"), Json.str(b, "value"), Json.lng(b, "term"), Json.instant(b, "since"),
                Json.instant(b, "expiresAt"));
    }

    boolean same(Leader o) {
        return o != null && term == o.term && candidate.equals(o.candidate) && value.equals(o.value);
    }
}

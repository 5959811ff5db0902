package io.fenceview;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * A lock (or a semaphore's every slot, a multi-lock's lock, an election) was not
 * granted because another holder has it (409 {@code lock-held}, {@code no-permit}).
 * Thrown by the methods that say why they did not acquire; the Redisson-shaped ones
 * answer null or false instead.
 */
public class LockHeldException extends FenceviewException {
    private static final long serialVersionUID = 1L;

    /** One lock of a multi-lock that another holder has, or that is in its lock-delay (holder null). */
    public record HeldLock(String resource, String holder, Instant expiresAt, Instant availableAt) {}

    private final String holder;
    private final transient Instant expiresAt;
    private final transient List<HeldLock> held;

    LockHeldException(Map<String, Object> body, String code, String message) {
        super(409, code, message);
        List<HeldLock> hs = new ArrayList<>();
        for (Object o : Json.list(body, "held")) {
            if (o instanceof Map) {
                @SuppressWarnings("unchecked")
                Map<String, Object> h = (Map<String, Object>) o;
                hs.add(new HeldLock(Json.str(h, "resourceId"), Json.str(h, "holder"), Json.instant(h, "expiresAt"), Json.instant(h, "availableAt")));
            }
        }
        Map<String, Object> leader = Json.obj(body, "leader");
        String who = Json.str(body, "holder");
        Instant until = Json.instant(body, "expiresAt");
        if (who == null && !leader.isEmpty()) {
            who = Json.str(leader, "candidate");
            until = Json.instant(leader, "expiresAt");
        } else if (who == null && !hs.isEmpty()) {
            who = hs.get(0).holder();
            until = hs.get(0).expiresAt();
        }
        this.holder = who;
        this.expiresAt = until;
        this.held = Collections.unmodifiableList(hs);
    }

    /** The holder that has it (for an election, the leader), null when the server did not say. */
    public String holder() {
        return holder;
    }

    /** When the holder's lease runs out, null when the server did not say. */
    public Instant expiresAt() {
        return expiresAt;
    }

    /** A multi-lock's locks that others hold, in the server's order; empty otherwise. */
    public List<HeldLock> held() {
        return held;
    }
}

package io.fenceview;

import java.time.Instant;
import java.util.Map;

/**
 * The lock is free but in its lock-delay (409 {@code lock-delay}): a lease granted
 * with a lock-delay ran out without a release, and nobody, its old holder included,
 * may take the lock before {@link #availableAt()}. A write still in flight from the
 * vanished holder lands or dies meanwhile. A release or a force-expire ends it.
 */
public class LockDelayException extends LockHeldException {
    private static final long serialVersionUID = 1L;
    private final transient Instant availableAt;

    LockDelayException(String what, Map<String, Object> body) {
        super(body, "lock-delay", "fenceview: " + what + " is in its lock-delay until " + Json.str(body, "availableAt"));
        this.availableAt = Json.instant(body, "availableAt");
    }

    /** When the delay ends. */
    public Instant availableAt() {
        return availableAt;
    }
}

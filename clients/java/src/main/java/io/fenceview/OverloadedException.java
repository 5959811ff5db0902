package io.fenceview;

import java.time.Duration;

/**
 * {@code overloaded} (429): the server shed the call under load and changed nothing;
 * the client already retried it within its deadline. {@link #retryAfter()} is the
 * server's advice for the next try. {@code limit} (a server limit reached) is one too.
 */
public class OverloadedException extends FenceviewException {
    private static final long serialVersionUID = 1L;
    private final Duration retryAfter;

    OverloadedException(int status, String code, Duration retryAfter, String message) {
        super(status, code, message);
        this.retryAfter = retryAfter;
    }

    /** How long the server asked callers to wait, null when it did not say. */
    public Duration retryAfter() {
        return retryAfter;
    }
}

package io.fenceview;

/** {@code not-leader}: The candidate does not lead the election (any longer). */
public class NotLeaderException extends LockOwnershipException {
    private static final long serialVersionUID = 1L;

    NotLeaderException(String resource, String message) {
        super(resource, "not-leader", message);
    }
}

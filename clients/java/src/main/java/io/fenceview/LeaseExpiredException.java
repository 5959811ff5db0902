package io.fenceview;

/** {@code lease-expired}: The caller's lease on the lock ran out, or was force-expired, and was not released since: its work must already have stopped (its token is refused once a newer holder writes). */
public class LeaseExpiredException extends LockOwnershipException {
    private static final long serialVersionUID = 1L;

    LeaseExpiredException(String resource, String message) {
        super(resource, "lease-expired", message);
    }
}

package io.fenceview;

/** {@code not-held}: Nobody holds the lock, and the caller's last lease on it is not one the server remembers losing: it never held it, or released it already. */
public class NotHeldException extends LockOwnershipException {
    private static final long serialVersionUID = 1L;

    NotHeldException(String resource, String message) {
        super(resource, "not-held", message);
    }
}

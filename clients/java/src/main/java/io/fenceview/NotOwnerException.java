package io.fenceview;

/** {@code not-owner}: Another holder (or another key) holds the lock. */
public class NotOwnerException extends LockOwnershipException {
    private static final long serialVersionUID = 1L;

    NotOwnerException(String resource, String message) {
        super(resource, "not-owner", message);
    }
}

package io.fenceview;

/**
 * A renew, release, resign or proclaim was refused because the caller does not hold
 * the lock (or lead the election): an {@link IllegalMonitorStateException}, as
 * {@link java.util.concurrent.locks.Lock#unlock()} promises, carrying the server's
 * code. Subclasses tell why: {@link LeaseExpiredException}, {@link NotOwnerException},
 * {@link NotHeldException}, {@link NotLeaderException}; a server too old to send a
 * code gives this class itself, with a null code.
 */
public class LockOwnershipException extends IllegalMonitorStateException {
    private static final long serialVersionUID = 1L;
    private final String resource;
    private final String code;

    LockOwnershipException(String resource, String code, String message) {
        super(message);
        this.resource = resource;
        this.code = code;
    }

    /** The lock's (or election's) resource id. */
    public String resource() {
        return resource;
    }

    /** The server's code, null from a server too old to send one. */
    public String getCode() {
        return code;
    }

    /** Always 409, the status of these refusals. */
    public int status() {
        return 409;
    }
}

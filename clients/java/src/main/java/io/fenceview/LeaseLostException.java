package io.fenceview;

/**
 * The lease of a hold ended while the holder still thought it held the lock: a
 * renewal was refused (the lock was force-expired or taken over), the server could
 * not be reached before the lease ran out, or a fixed lease ran out. Stop the work
 * done under the lock; its token will be refused once a newer holder has written.
 */
public class LeaseLostException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String resource;
    private final long token;

    public LeaseLostException(String resource, long token, String message, Throwable cause) {
        super("fenceview: lease of " + resource + " (token " + token + ") lost: " + message, cause);
        this.resource = resource;
        this.token = token;
    }

    public String resource() {
        return resource;
    }

    /** The token of the hold's latest grant. */
    public long token() {
        return token;
    }
}

package io.fenceview;

/**
 * The lease of a hold ended while the holder still thought it held the lock: a
 * renewal was refused (the lock was force-expired or taken over), the server could
 * not be reached before the lease ran out, or a fixed lease ran out. Stop the work
 * done under the lock; its token will be refused once a newer holder has written.
 */
public class LeaseLostException extends FencingException {
    private static final long serialVersionUID = 1L;
    private final long token;

    public LeaseLostException(String resource, long token, String message, Throwable cause) {
        super(resource, "fenceview: lease of " + resource + " (token " + token + ") lost: " + message, cause);
        this.token = token;
    }

    /** The token of the hold's latest grant. */
    @Override
    public long token() {
        return token;
    }
}

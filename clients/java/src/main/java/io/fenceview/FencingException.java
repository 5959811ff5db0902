package io.fenceview;

/**
 * The work done under a lock must stop: the lease of its hold was lost
 * ({@link LeaseLostException}) or a guard refused its token
 * ({@link FencedOutException}). Either way the token is, or soon will be, refused;
 * catch this to stop on both.
 */
public abstract class FencingException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String resource;

    FencingException(String resource, String message, Throwable cause) {
        super(message, cause);
        this.resource = resource;
    }

    /** The resource id of the lock (or slot, or election) whose token it was. */
    public String resource() {
        return resource;
    }

    /** The token that is no longer good. */
    public abstract long token();
}

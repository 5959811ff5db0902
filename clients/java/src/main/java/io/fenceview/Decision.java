package io.fenceview;

/**
 * A guard's answer to one token: accepted, or refused with the reason and the token
 * that would have been required.
 *
 * @param accepted  whether the write was done
 * @param reason    why it was refused ({@link #STALE_TOKEN}, {@link #BAD_SIGNATURE}, ...), "" when accepted
 * @param presented the token shown
 * @param required  the mark that refused it (0 when accepted: the guard does not read the mark then)
 */
public record Decision(boolean accepted, String reason, long presented, long required) implements java.io.Serializable {
    private static final long serialVersionUID = 1L;

    /** The token is below the resource's high-water mark: a newer holder has written. */
    public static final String STALE_TOKEN = "stale-token";
    /** The token's signature is missing or was not made by a trusted key for this resource and token. */
    public static final String BAD_SIGNATURE = "bad-signature";
    /** A write presented with a shared (reader's) grant's token. */
    public static final String SHARED_TOKEN = "shared-token";

    static Decision accept(long token) {
        return new Decision(true, "", token, 0);
    }

    static Decision stale(long token, long mark) {
        return new Decision(false, STALE_TOKEN, token, mark);
    }

    /** A refusal as an exception, for code that would rather throw; null when accepted. */
    public FencedOutException toException(String resource) {
        return accepted ? null : new FencedOutException(resource, this);
    }
}

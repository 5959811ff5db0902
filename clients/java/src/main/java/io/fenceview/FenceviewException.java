package io.fenceview;

/**
 * A call to the fenceview server failed: the server could not be reached, or it
 * answered with an error. {@link #status()} is the HTTP status, 0 when no answer came;
 * {@link #getCode()} is the refusal's stable code ({@code lock-held},
 * {@code overloaded}, ...). Subclasses name the refusals a program branches on; the
 * message is for people and may change.
 */
public class FenceviewException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int status;
    private final String code;

    public FenceviewException(int status, String message) {
        this(status, null, message);
    }

    public FenceviewException(int status, String code, String message) {
        super(message);
        this.status = status;
        this.code = code;
    }

    public FenceviewException(String message, Throwable cause) {
        this(0, null, message);
        initCause(cause);
    }

    /** The HTTP status of the server's answer; 0 when there was none. */
    public int status() {
        return status;
    }

    /**
     * The refusal's code, as the server sent it; from a server too old to send one,
     * the code its status (and fields) imply. Null when no answer came or the answer
     * implies none.
     */
    public String getCode() {
        return code;
    }

    /** Worth retrying: no answer, overload, or a 5xx (no leader yet). Refusals are final. */
    public boolean isTemporary() {
        return status == 0 || status == 429 || status >= 500;
    }
}

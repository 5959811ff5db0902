package io.fenceview;

/**
 * A call to the fenceview server failed: the server could not be reached, or it
 * answered with an error. {@link #status()} is the HTTP status, 0 when no answer came.
 */
public class FenceviewException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int status;

    public FenceviewException(int status, String message) {
        super(message);
        this.status = status;
    }

    public FenceviewException(String message, Throwable cause) {
        super(message, cause);
        this.status = 0;
    }

    /** The HTTP status of the server's answer; 0 when there was none. */
    public int status() {
        return status;
    }

    /** Worth retrying: no answer, or a 5xx (no leader yet, overload). Refusals are final. */
    public boolean isTemporary() {
        return status == 0 || status >= 500;
    }
}

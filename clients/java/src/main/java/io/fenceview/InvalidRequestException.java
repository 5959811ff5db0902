package io.fenceview;

/**
 * The server refused the call's input (400 {@code invalid-request},
 * {@code unknown-field}, {@code invalid-token}; 413 {@code too-large}); nothing
 * changed. Not worth retrying as it is.
 */
public class InvalidRequestException extends FenceviewException {
    private static final long serialVersionUID = 1L;
    private final String field;

    InvalidRequestException(int status, String code, String field, String message) {
        super(status, code, message);
        this.field = field;
    }

    /** The field at fault, null when the server named none. */
    public String field() {
        return field;
    }
}

package io.fenceview;

/**
 * The server refused the call's input (400 {@code invalid-request},
 * {@code unknown-field}, {@code invalid-token}; 413 {@code too-large}); nothing
 * changed. Not worth retrying as it is. Input the client refuses itself, before
 * sending anything (a holder over 80 bytes, a token below 1), is this exception too,
 * with the code and {@link #field()} the server would give.
 */
public class InvalidRequestException extends FenceviewException {
    private static final long serialVersionUID = 1L;
    private final String field;

    InvalidRequestException(int status, String code, String field, String message) {
        super(status, code, message);
        this.field = field;
    }

    /** Input refused before sending: 400 with code ({@code invalid-request}, {@code invalid-token}) and field. */
    static InvalidRequestException beforeSending(String code, String field, String message) {
        return new InvalidRequestException(400, code, field, "fenceview: " + field + " refused before sending: " + message);
    }

    /** An {@code invalid-request} of field, refused before sending. */
    static InvalidRequestException beforeSending(String field, String message) {
        return beforeSending("invalid-request", field, message);
    }

    /** The field at fault, null when the server named none. */
    public String field() {
        return field;
    }
}

package io.fenceview;

/** 404 {@code not-found}: the server knows no such route or thing. */
public class NotFoundException extends FenceviewException {
    private static final long serialVersionUID = 1L;

    NotFoundException(String message) {
        super(404, "not-found", message);
    }
}

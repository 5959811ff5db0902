package io.fenceview;

/**
 * The credential was refused: 401 {@code unauthenticated} (missing, unknown or
 * revoked) or 403 {@code forbidden} (the key's role or prefixes do not allow it).
 */
public class AccessDeniedException extends FenceviewException {
    private static final long serialVersionUID = 1L;

    AccessDeniedException(int status, String code, String message) {
        super(status, code, message);
    }
}

package io.fenceview;

/**
 * {@code permits-mismatch}: the semaphore was created with another number of permits
 * than this acquire asked for. Use {@link #permits()}, or change it with
 * {@link FencedSemaphore#setPermits(int)} (admin).
 */
public class PermitsMismatchException extends FenceviewException {
    private static final long serialVersionUID = 1L;
    private final int permits;

    PermitsMismatchException(int permits, String message) {
        super(409, "permits-mismatch", message);
        this.permits = permits;
    }

    /** The semaphore's number of permits on the server. */
    public int permits() {
        return permits;
    }
}

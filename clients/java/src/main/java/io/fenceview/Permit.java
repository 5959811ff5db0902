package io.fenceview;

import java.util.concurrent.CompletableFuture;

/**
 * One slot of a {@link FencedSemaphore}, held: the lock {@code name#slot} and its
 * token. Fence the work done under the permit with {@link #getFencingToken()}; stop it
 * when {@link #leaseLost()} completes. Not tied to a thread: any thread may release it.
 */
public final class Permit {
    private final FencedSemaphore semaphore;
    private final int slot;
    private final Hold hold;
    private final FencingToken token;

    Permit(FencedSemaphore semaphore, int slot, Hold hold) {
        this.semaphore = semaphore;
        this.slot = slot;
        this.hold = hold;
        this.token = hold.token();
    }

    FencedSemaphore semaphore() {
        return semaphore;
    }

    Hold hold() {
        return hold;
    }

    /** The slot's number, 0..permits-1. */
    public int slot() {
        return slot;
    }

    /** The slot's resource id, e.g. {@code jobs#3}: Redisson's permit id, and the resource a guard fences by. */
    public String getId() {
        return token.resource();
    }

    /** The slot's token of this grant. */
    public Long getToken() {
        return token.number();
    }

    public FencingToken getFencingToken() {
        return token;
    }

    /** The holder id the server knows the permit by. */
    public String holder() {
        return hold.holder;
    }

    /** Whether the permit is still held, as far as the client knows. */
    public boolean isHeld() {
        return !hold.ended;
    }

    /**
     * Completes with the cause the moment the permit's lease is found lost; cancelled
     * when it is released.
     */
    public CompletableFuture<LeaseLostException> leaseLost() {
        return FenceviewClient.relay(hold.lost);
    }

    /** Gives the slot back ({@link FencedSemaphore#release(Permit)}). */
    public void release() {
        semaphore.release(this);
    }

    @Override
    public String toString() {
        return "Permit[" + getId() + ", token " + token.number() + "]";
    }
}

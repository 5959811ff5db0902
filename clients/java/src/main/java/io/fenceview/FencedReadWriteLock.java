package io.fenceview;

import java.util.concurrent.locks.ReadWriteLock;

/**
 * A fenced read-write lock on one resource, in the shape of Redisson's
 * {@code RReadWriteLock}: {@link #readLock()} is held by many readers at once,
 * {@link #writeLock()} by one writer while no reader holds it. Admission is first come,
 * first served, so waiting writers are not starved by a stream of readers.
 *
 * <p>Both sides are {@link FencedLock}s and fence their work. All readers of one read
 * phase share one token, above every earlier writer's and below every later one's; a
 * reader's {@link FencingToken} is {@linkplain FencingToken#shared() shared} (its
 * signature says so) and is presented for reads ({@code X-Fencing-Access: read},
 * {@link JdbcGuard#read}): a guard refuses it for a write ({@code shared-token}). So a
 * writer whose lease ran out cannot write once a later reader has read, and a reader
 * whose phase ended is refused once a later writer has written.
 *
 * <p>A re-entrant read keeps the token. There is no upgrade: a thread holding one side
 * that asks for the other is refused as held ({@code lock-held}), so
 * {@code tryLock} answers false and {@code lock} waits, as for another holder: release
 * the read lock before taking the write lock.
 */
public final class FencedReadWriteLock implements ReadWriteLock {
    private final FencedLock read;
    private final FencedLock write;

    FencedReadWriteLock(FenceviewClient c, String resource) {
        this.read = new FencedLock(c, resource, 0, true);
        this.write = new FencedLock(c, resource, 0, false);
    }

    /** The resource id. */
    public String getName() {
        return write.getName();
    }

    /** The shared side: many readers at once. */
    @Override
    public FencedLock readLock() {
        return read;
    }

    /** The exclusive side: one writer, no readers. */
    @Override
    public FencedLock writeLock() {
        return write;
    }
}

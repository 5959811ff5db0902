package io.fenceview;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A semaphore of N fenced slots, in the shape of Redisson's
 * {@code RPermitExpirableSemaphore}: slot i is the ordinary lock {@code name#i}, with
 * its own token counter, so a guard fences the work done under a {@link Permit} by the
 * slot's resource id and token. {@code acquire} answers a permit (Redisson's permit
 * id is {@link Permit#getId()}), renewed by the client's watchdog until released when
 * no lease time is given.
 *
 * <p>The number of permits is fixed by the first acquire of a name and stored by the
 * server; an acquire with another number fails (409 {@code "permits mismatch"}).
 * {@link #setPermits(int)} (admin) changes it.
 */
public final class FencedSemaphore extends Named {
    /** The most permits a semaphore may have. */
    public static final int MAX_PERMITS = 1024;
    /** The longest name: its slots' ids stay within a resource id's 160 bytes. */
    public static final int MAX_NAME = 150;

    private final int permits;
    private final long lockDelayMs;

    FencedSemaphore(FenceviewClient c, String name, int permits, long lockDelayMs) {
        super(c, "semaphores", Ids.resource(name, "name"));
        if (name.getBytes(StandardCharsets.UTF_8).length > MAX_NAME || name.indexOf('#') >= 0) {
            throw InvalidRequestException.beforeSending("name", "a semaphore name is at most " + MAX_NAME + " bytes and has no '#'");
        }
        if (permits < 1 || permits > MAX_PERMITS) {
            throw InvalidRequestException.beforeSending("permits", "permits " + permits + ": want 1.." + MAX_PERMITS);
        }
        this.permits = permits;
        this.lockDelayMs = lockDelayMs;
    }

    /** The permits this semaphore asks for (the server's count must match). */
    public int getPermits() {
        return permits;
    }

    /** This semaphore with a lock-delay on every slot it grants (see {@link FencedLock#withLockDelay}). */
    public FencedSemaphore withLockDelay(Duration delay) {
        if (delay.isNegative() || delay.compareTo(FencedLock.MAX_LOCK_DELAY) > 0) {
            throw InvalidRequestException.beforeSending("lockDelayMs", "lock-delay " + delay + ": want 0..60s");
        }
        return new FencedSemaphore(c, name, permits, delay.toMillis());
    }

    /** Blocks until a slot is free and returns its permit, renewed by the watchdog. */
    public Permit acquire() {
        return FenceviewClient.await(acquireAsync(-1, -1, null));
    }

    /** Blocks until a slot is free and returns its permit, held for leaseTime (not renewed). */
    public Permit acquire(long leaseTime, TimeUnit unit) {
        return FenceviewClient.await(acquireAsync(-1, Waiting.lease(leaseTime, unit), null));
    }

    /** A permit if a slot is free now; null when every slot is held. */
    public Permit tryAcquire() {
        return Waiting.tryAwait(acquireAsync(0, -1, null));
    }

    /** Waits up to waitTime for a slot; null when none came free. */
    public Permit tryAcquire(long waitTime, TimeUnit unit) {
        return Waiting.tryAwait(acquireAsync(Waiting.waitMs(waitTime, unit), -1, null));
    }

    /** Waits up to waitTime for a slot, held for leaseTime (-1: the watchdog); null when none came free. */
    public Permit tryAcquire(long waitTime, long leaseTime, TimeUnit unit) {
        return Waiting.tryAwait(acquireAsync(Waiting.waitMs(waitTime, unit), Waiting.lease(leaseTime, unit), null));
    }

    /**
     * As {@link #tryAcquire(long, long, TimeUnit)}, but a refusal is an exception:
     * {@link LockHeldException} ({@code "no permit free"}).
     */
    public Permit tryAcquireOrThrow(long waitTime, long leaseTime, TimeUnit unit) {
        FenceviewClient.Answer[] refusal = new FenceviewClient.Answer[1];
        Permit p = Waiting.tryAwait(acquireAsync(Waiting.waitMs(waitTime, unit), Waiting.lease(leaseTime, unit), refusal));
        if (p == null) {
            throw refusal[0] == null ? new FenceviewException(0, "fenceview: acquire of " + name + " gave up")
                    : Refusals.held(refusal[0], permits, name);
        }
        return p;
    }

    public CompletableFuture<Permit> acquireAsync() {
        return acquireAsync(-1, -1, null);
    }

    public CompletableFuture<Permit> tryAcquireAsync(long waitTime, long leaseTime, TimeUnit unit) {
        return acquireAsync(Waiting.waitMs(waitTime, unit), Waiting.lease(leaseTime, unit), null);
    }

    private CompletableFuture<Permit> acquireAsync(long waitMs, long leaseMs, FenceviewClient.Answer[] refusal) {
        boolean renewing = leaseMs < 0;
        long lease = renewing ? c.watchdogTimeout().toMillis() : leaseMs;
        String holder = c.holderId(Thread.currentThread().getId());
        return Waiting.run(c, "acquire a permit of " + name, waitMs, chunk -> {
            Map<String, Object> in = Waiting.acquireBody(holder, lease, chunk, lockDelayMs);
            in.put("permits", permits);
            return c.call("POST", path("acquire"), in, c.requestTimeout().plusMillis(chunk));
        }, (a, sent) -> granted(a, holder, lease, renewing, sent), a -> release(holder, (int) Json.lng(a.body, "slot")),
                refusal, permits);
    }

    private Permit granted(FenceviewClient.Answer a, String holder, long lease, boolean renewing, long sent) {
        int slot = (int) Json.lng(a.body, "slot");
        String resource = Json.str(a.body, "resourceId");
        FencingToken t = FencingToken.ofGrant(resource, a.body);
        long ms = Json.lng(a.body, "leaseMs");
        Hold h = new Hold(c, new Hold.Key(resource, 0, "permit"), holder, ms > 0 ? ms : lease, renewing);
        h.granted(t, 1);
        c.holds.put(h.key, h);
        h.begin(sent);
        return new Permit(this, slot, h);
    }

    private CompletableFuture<FenceviewClient.Answer> release(String holder, int slot) {
        Map<String, Object> in = new LinkedHashMap<>();
        in.put("holder", holder);
        in.put("slot", slot);
        return c.call("POST", path("release"), in, null);
    }

    /**
     * Gives the permit's slot back; its watchdog stops. After the permit's lease was lost
     * it returns quietly, as {@link FencedLock#unlock()} does: the slot is no longer the
     * permit's, nothing is given back, and {@link Permit#leaseLost()} (completed, here if
     * not before) and the guards already said so. The release in a {@code finally} then
     * hides no exception of the work.
     *
     * @throws IllegalMonitorStateException when the permit was released already (a
     *                                      {@link LockOwnershipException} with the
     *                                      server's code)
     */
    public void release(Permit p) {
        FenceviewClient.await(releaseAsync(p));
    }

    /** {@link #release(Permit)}, completing when the server answered. */
    public CompletableFuture<Void> releaseAsync(Permit p) {
        if (p.semaphore() != this && !p.semaphore().name.equals(name)) {
            throw new IllegalArgumentException("fenceview: " + p.getId() + " is not a permit of " + name);
        }
        Hold h = p.hold();
        if (h.isLost() && h.count() > 0) {
            h.unlockLost();
            return CompletableFuture.completedFuture(null);
        }
        h.releasing(true);
        return release(h.holder, p.slot()).handle((a, err) -> {
            if (err != null) {
                h.releasing(false);
                throw FenceviewClient.rethrow(err);
            }
            if (a.ok()) {
                h.finish();
                return null;
            }
            RuntimeException refused = a.failure(Refusals.Op.OWNERSHIP, p.getId(), "release " + p.getId());
            if (refused instanceof LockOwnershipException) {
                // A permit the client still counted as held: its lease was lost, and
                // this is where the client learns it. One released already is not.
                h.lose("release refused: " + refused.getMessage(), refused);
                if (h.isLost() && h.count() > 0) {
                    h.unlockLost();
                    return null;
                }
            } else {
                h.releasing(false);
            }
            throw refused;
        });
    }

    /** The slots free now (asks the server); all of them when the semaphore was never acquired. */
    public int availablePermits() {
        FenceviewClient.Answer a = FenceviewClient.await(c.call("GET", path(""), null, null));
        if (a.status == 404) {
            return permits;
        }
        if (!a.ok()) {
            throw a.failure("semaphore " + name);
        }
        return (int) Json.lng(a.body, "free");
    }

    /**
     * The semaphore as the server sees it ({@code GET /v1/semaphores/{name}}): permits,
     * free, waiters and every held slot; null when it was never acquired.
     */
    public Map<String, Object> getState() {
        FenceviewClient.Answer a = FenceviewClient.await(c.call("GET", path(""), null, null));
        if (a.status == 404) {
            return null;
        }
        if (!a.ok()) {
            throw a.failure("semaphore " + name);
        }
        return a.body;
    }

    /**
     * Changes the server's permits of this semaphore (admin). Held slots above the new
     * count stay held until released and are not granted again. Returns a semaphore of
     * the new count.
     */
    public FencedSemaphore setPermits(int n) {
        FencedSemaphore next = new FencedSemaphore(c, name, n, lockDelayMs);
        Map<String, Object> in = new LinkedHashMap<>();
        in.put("permits", n);
        FenceviewClient.Answer a = FenceviewClient.await(c.admin("PUT", path(""), in));
        if (!a.ok()) {
            throw a.failure(Refusals.Op.OTHER, name, "set the permits of " + name);
        }
        return next;
    }
}

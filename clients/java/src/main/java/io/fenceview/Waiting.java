package io.fenceview;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.LongFunction;

/**
 * The waiting of a permit, a multi-lock or a campaign, as {@link FencedLock} waits:
 * on the server, first come first served, in chunks of at most a minute.
 */
final class Waiting {
    private Waiting() {}

    /**
     * The body of an acquire (of a lock, a permit, a multi-lock): the holder, the
     * lease, this attempt's chunk of the wait, and the lock-delay when there is one.
     * The caller adds what is its own (the permits, the resources).
     */
    static Map<String, Object> acquireBody(String holder, long leaseMs, long waitMs, long lockDelayMs) {
        Map<String, Object> in = new LinkedHashMap<>();
        in.put("holder", holder);
        in.put("leaseMs", leaseMs);
        in.put("waitMs", waitMs);
        if (lockDelayMs > 0) {
            in.put("lockDelayMs", lockDelayMs);
        }
        return in;
    }

    /** What to do with a grant. */
    interface Granted<T> {
        T apply(FenceviewClient.Answer a, long sentNanos);
    }

    /**
     * Asks (with the chunk of the wait in ms) until granted or the wait (waitMs; -1:
     * forever) is over. Completes with the granted result, or null after the last
     * refusal that means "held now" (lock-held, lock-delay, no-permit; askedPermits is
     * a semaphore's, 0 otherwise), which is kept in refusal[0]. Any
     * other answer fails it. A grant that arrives after the future was cancelled is
     * handed to late, which gives it back.
     */
    static <T> CompletableFuture<T> run(FenceviewClient c, String what, long waitMs, LongFunction<CompletableFuture<FenceviewClient.Answer>> ask,
            Granted<T> granted, Consumer<FenceviewClient.Answer> late, FenceviewClient.Answer[] refusal,
            int askedPermits) {
        return run(c, what, waitMs, ask, granted, late, null, refusal, askedPermits);
    }

    /**
     * The same, but a grant already recorded by granted when the future turns out
     * cancelled is handed to undo (with the result), not to late: a re-entrant lock
     * gives back one grant, not the whole hold.
     */
    static <T> CompletableFuture<T> run(FenceviewClient c, String what, long waitMs, LongFunction<CompletableFuture<FenceviewClient.Answer>> ask,
            Granted<T> granted, Consumer<FenceviewClient.Answer> late, Consumer<T> undo, FenceviewClient.Answer[] refusal,
            int askedPermits) {
        if (waitMs < -1) {
            throw InvalidRequestException.beforeSending("waitMs", "negative wait " + waitMs + " ms");
        }
        long deadline = waitMs < 0 ? 0 : System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMs);
        CompletableFuture<T> out = new CompletableFuture<>();
        attempt(c, what, out, waitMs < 0, deadline, ask, granted, late, undo, refusal, askedPermits);
        return out;
    }

    private static <T> void attempt(FenceviewClient c, String what, CompletableFuture<T> out, boolean forever, long deadline,
            LongFunction<CompletableFuture<FenceviewClient.Answer>> ask, Granted<T> granted, Consumer<FenceviewClient.Answer> late,
            Consumer<T> undo, FenceviewClient.Answer[] refusal, int askedPermits) {
        if (out.isDone()) {
            return;
        }
        long chunk = FencedLock.MAX_WAIT_CHUNK_MS;
        if (!forever) {
            chunk = Math.min(chunk, Math.max(TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()), 0));
        }
        long sent = System.nanoTime();
        long wait = chunk;
        ask.apply(chunk).whenComplete((a, err) -> {
            if (err != null) {
                out.completeExceptionally(FenceviewClient.unwrap(err));
                return;
            }
            try {
                if (a.ok()) {
                    if (out.isCancelled()) {
                        late.accept(a);
                        return;
                    }
                    T result = granted.apply(a, sent);
                    if (!out.complete(result)) {
                        if (undo != null) {
                            undo.accept(result);
                        } else {
                            late.accept(a);
                        }
                    }
                } else if (Refusals.busy(a, askedPermits) && (forever || (wait > 0 && deadline - System.nanoTime() > 0))) {
                    attempt(c, what, out, forever, deadline, ask, granted, late, undo, refusal, askedPermits);
                } else if (Refusals.busy(a, askedPermits)) {
                    if (refusal != null) {
                        refusal[0] = a;
                    }
                    out.complete(null);
                } else {
                    out.completeExceptionally(Refusals.exception(a, Refusals.Op.ACQUIRE, askedPermits, null, what));
                }
            } catch (RuntimeException e) {
                out.completeExceptionally(e);
            }
        });
    }

    /** A blocking wait that an interrupt ends, giving up the wait (a late grant is given back). */
    static <T> T interruptibly(CompletableFuture<T> f) throws InterruptedException {
        try {
            return f.get();
        } catch (InterruptedException e) {
            f.cancel(false);
            throw e;
        } catch (java.util.concurrent.ExecutionException e) {
            throw FenceviewClient.rethrow(e.getCause());
        }
    }

    /** A blocking try: the result, or null when refused or interrupted (the interrupt kept). */
    static <T> T tryAwait(CompletableFuture<T> f) {
        try {
            return f.get();
        } catch (InterruptedException e) {
            f.cancel(false);
            Thread.currentThread().interrupt();
            return null;
        } catch (java.util.concurrent.ExecutionException e) {
            throw FenceviewClient.rethrow(e.getCause());
        }
    }

    /** A wait in ms; 0 or less means do not wait. */
    static long waitMs(long waitTime, TimeUnit unit) {
        return Math.max(0, unit.toMillis(waitTime));
    }

    /** An explicit lease in ms (at least 1), or -1 (the watchdog) for a lease time of 0 or less. */
    static long lease(long leaseTime, TimeUnit unit) {
        return leaseTime <= 0 ? -1 : Math.max(1, unit.toMillis(leaseTime));
    }
}

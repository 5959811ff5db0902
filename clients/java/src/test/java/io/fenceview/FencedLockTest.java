package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The lock's behaviour against a real server: Redisson's RFencedLock semantics. */
class FencedLockTest {
    private FenceviewClient c;
    private ExecutorService pool;

    @BeforeEach
    void setUp() {
        c = Env.client();
        pool = Executors.newCachedThreadPool();
    }

    @AfterEach
    void tearDown() {
        pool.shutdownNow();
        c.close();
    }

    @Test
    void reentrantGrantsTakeNewTokensAndCountHolds() {
        FencedLock lock = c.getFencedLock(Env.resource("reentrant"));
        Long first = lock.lockAndGetToken();
        Long second = lock.lockAndGetToken();
        assertNotNull(first);
        assertTrue(second > first, "a re-entrant grant takes a new, larger token: " + first + " then " + second);
        assertEquals(second, lock.getToken());
        assertEquals(2, lock.getHoldCount());
        lock.unlock();
        assertEquals(1, lock.getHoldCount());
        assertTrue(lock.isHeldByCurrentThread(), "still held after one of two unlocks");
        lock.unlock();
        assertFalse(lock.isLocked());
        assertNull(lock.getToken());
        assertEquals(-2, lock.remainTimeToLive());
        Long third = lock.tryLockAndGetToken();
        assertTrue(third > second, "tokens keep rising across release: " + third);
        lock.unlock();
    }

    @Test
    void onlyTheOwnerThreadMayUnlock() throws Exception {
        String r = Env.resource("owner");
        FencedLock lock = c.getFencedLock(r);
        assertTrue(lock.tryLock());
        ExecutionException e = assertThrows(ExecutionException.class, () -> pool.submit(lock::unlock).get());
        assertTrue(e.getCause() instanceof IllegalMonitorStateException, "another thread: " + e.getCause());
        try (FenceviewClient other = Env.client()) {
            // Same thread id, another client: another holder.
            assertThrows(IllegalMonitorStateException.class, () -> other.getFencedLock(r).unlock());
            assertNull(other.getFencedLock(r).tryLockAndGetToken(), "the lock is still held");
        }
        assertTrue(lock.isHeldByCurrentThread());
        assertFalse(pool.submit(lock::isHeldByCurrentThread).get());
        lock.unlock();
        assertThrows(IllegalMonitorStateException.class, lock::unlock, "unlock of a lock no longer held");
    }

    @Test
    void tryLockWaitsOnTheServerAndGivesUpWithNull() throws Exception {
        String r = Env.resource("try");
        FencedLock lock = c.getFencedLock(r);
        Long held = lock.lockAndGetToken();
        Future f = new Future(pool.submit(() -> c.getFencedLock(r).tryLockAndGetToken(50, TimeUnit.MILLISECONDS)));
        assertNull(f.get(), "the lock stayed held");
        // A waiter is served when the holder unlocks.
        CompletableFuture<Long> waiter = new CompletableFuture<>();
        pool.submit(() -> waiter.complete(c.getFencedLock(r).tryLockAndGetToken(30, TimeUnit.SECONDS)));
        Env.awaitWaiter(r);
        lock.unlock();
        Long next = waiter.get(30, TimeUnit.SECONDS);
        assertNotNull(next, "the waiter got the lock");
        assertTrue(next > held);
    }

    /**
     * An interrupted lockInterruptibly gives up at once; the server may still grant
     * the wait it was serving, and that grant, which nobody would ever unlock, is
     * released by the client.
     */
    @Test
    void interruptedWaitGivesUpAndReleasesALateGrant() throws Exception {
        String r = Env.resource("interrupt");
        FencedLock lock = c.getFencedLock(r);
        Long held = lock.lockAndGetToken();
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            try {
                lock.lockInterruptibly();
                outcome.complete(null);
            } catch (Throwable t) {
                outcome.complete(t);
            }
        });
        waiter.start();
        Env.awaitWaiter(r);
        waiter.interrupt();
        assertTrue(outcome.get(10, TimeUnit.SECONDS) instanceof InterruptedException, "lockInterruptibly threw InterruptedException");
        assertFalse(lock.isHeldByThread(waiter.getId()));
        // The holder leaves; the server hands the lock to the abandoned wait (a new
        // token), and the client gives it back.
        lock.unlock();
        Env.until("the late grant to be released", () -> {
            LockState st = c.getLockState(r);
            return st.token() > held && !st.locked();
        });
        assertTrue(lock.leaseLost(waiter.getId()).isCancelled(), "no hold was recorded for the interrupted thread");
        // Interrupted tryLockAndGetToken: null, and the interrupt is kept.
        Long t = c.getFencedLock(r).tryLockAndGetToken();
        Thread.currentThread().interrupt();
        try (FenceviewClient other = Env.client()) {
            assertNull(other.getFencedLock(r).tryLockAndGetToken(10, TimeUnit.SECONDS));
            assertTrue(Thread.interrupted(), "the interrupt status is kept (and cleared here)");
        }
        lock.unlock();
        assertNotNull(t);
    }

    @Test
    void watchdogKeepsTheLockAcrossThreeLeases() throws Exception {
        String r = Env.resource("watchdog");
        // A short lease, but not so short that a busy machine's slow answers
        // would lose it (each renewal may take up to a third of it).
        long leaseMs = 1000;
        try (FenceviewClient shortLease = Env.client(Duration.ofMillis(leaseMs))) {
            FencedLock lock = shortLease.getFencedLock(r);
            Long token = lock.lockAndGetToken();
            // A contender waits on the server until three leases have passed: it
            // gets the lock only if a renewal is missed. Its waits are the time passing.
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(3 * leaseMs);
            int tries = 0;
            for (long left; (left = end - System.nanoTime()) > 0; tries++) {
                Long contender = c.getFencedLock(r).tryLockAndGetToken(TimeUnit.NANOSECONDS.toMillis(left) + 1, TimeUnit.MILLISECONDS);
                assertNull(contender, "the watchdog kept the lock (try " + tries + ")");
            }
            assertTrue(lock.isHeldByCurrentThread());
            assertEquals(token, lock.getToken(), "renewals keep the token");
            assertFalse(lock.leaseLost().isDone());
            CompletableFuture<LeaseLostException> lost = lock.leaseLost();
            lock.unlock();
            assertThrows(CancellationException.class, lost::join, "a clean unlock never reports a lost lease");
        }
    }

    /**
     * A lease lost to a force-expire: leaseLost() says so, the token stays readable
     * (to report the refusal and show it to a guard, which refuses it once a newer
     * holder wrote), and the holder's unlock in its finally returns quietly; another
     * thread's unlock still throws.
     */
    @Test
    void forceExpireIsSignalledAsLeaseLost() throws Exception {
        String r = Env.resource("expire");
        JdbcGuard guard = JdbcGuard.acceptingUnsignedTokens();
        // The lease is long enough that only the force-expire can end it.
        try (FenceviewClient holder = Env.client(Duration.ofSeconds(3)); Connection db = JdbcGuardTest.connect("sqlite")) {
            String table = JdbcGuardTest.inventory(db);
            FencedLock lock = holder.getFencedLock(r);
            Long token = lock.lockAndGetToken();
            FencingToken before = lock.getFencingToken();
            CompletableFuture<LeaseLostException> lost = lock.leaseLost();
            // The admin, elsewhere, force-expires the lock (Redisson's forceUnlock).
            try (FenceviewClient admin = FenceviewClient.builder().url(Env.url()).apiKey(Env.prop("admin")).build()) {
                assertTrue(admin.getFencedLock(r).forceUnlock(), "it was locked");
            }
            LeaseLostException e = lost.get(10, TimeUnit.SECONDS);
            assertEquals(r, e.resource());
            assertEquals(token.longValue(), e.token());
            assertTrue(e.getMessage().contains("renewal refused"), e.getMessage());
            assertEquals(token, lock.getToken(), "the last grant's token, after the lease is lost");
            assertEquals(before, lock.getFencingToken(), "with its signature");
            assertTrue(lock.leaseLost().isDone() && !lock.leaseLost().isCancelled(), "leaseLost() still says lost");

            // A newer holder writes; the old token is refused by the row.
            FencedLock next = c.getFencedLock(r);
            Long newer = next.lockAndGetToken();
            assertTrue(guard.update(db, table, "product_id", 42, newer, Map.of("stock", 7)).accepted());
            Decision d = guard.update(db, table, "product_id", 42, lock.getToken(), Map.of("stock", 1));
            assertEquals(new Decision(false, Decision.STALE_TOKEN, token, newer), d);

            // The old holder's finally: quiet. Another thread never held it: it throws.
            ExecutionException other = assertThrows(ExecutionException.class, () -> pool.submit(lock::unlock).get());
            assertTrue(other.getCause() instanceof IllegalMonitorStateException, "another thread: " + other.getCause());
            lock.unlock();
            assertNull(lock.getToken(), "forgotten after the thread's unlock");
            assertThrows(IllegalMonitorStateException.class, lock::unlock, "one unlock too many");
            assertTrue(next.isHeldByCurrentThread(), "the quiet unlock released nothing");
            next.unlock();
        }
    }

    /**
     * A re-entrant hold whose lease was lost takes as many quiet unlocks as it had
     * grants; the first refused release is where the client may learn of the loss.
     */
    @Test
    void unlockAfterALossTheWatchdogHasNotSeenIsQuiet() throws Exception {
        String r = Env.resource("expire-unseen");
        // A watchdog lease so long that no renewal happens during the test.
        try (FenceviewClient holder = Env.client(Duration.ofMinutes(10))) {
            FencedLock lock = holder.getFencedLock(r);
            Long first = lock.lockAndGetToken();
            Long second = lock.lockAndGetToken();
            CompletableFuture<LeaseLostException> lost = lock.leaseLost();
            Env.forceExpire(r);
            assertFalse(lost.isDone(), "nothing has told the client yet");
            lock.unlock();
            assertEquals(second.longValue(), lost.get(10, TimeUnit.SECONDS).token(), "the refused release signals the loss");
            assertEquals(second, lock.getToken());
            lock.unlock();
            assertNull(lock.getToken());
            assertThrows(IllegalMonitorStateException.class, lock::unlock);
            assertTrue(first < second);
        }
    }

    @Test
    void fixedLeaseEndsAndIsSignalled() throws Exception {
        String r = Env.resource("fixed");
        FencedLock lock = c.getFencedLock(r);
        Long token = lock.tryLockAndGetToken(0, 300, TimeUnit.MILLISECONDS);
        assertNotNull(token);
        LeaseLostException e = lock.leaseLost().get(10, TimeUnit.SECONDS);
        assertTrue(e.getMessage().contains("fixed lease"), e.getMessage());
        // The server agrees: another holder gets the lock (waiting out the rest of
        // the lease on the server, if any).
        try (FenceviewClient other = Env.client()) {
            Long next = other.getFencedLock(r).tryLockAndGetToken(5, TimeUnit.SECONDS);
            assertNotNull(next);
            assertTrue(next > token);
            other.getFencedLock(r).unlock();
        }
    }

    @Test
    void asyncUnlockFromAnotherThreadWithTheCapturedThreadId() throws Exception {
        String r = Env.resource("async");
        FencedLock lock = c.getFencedLock(r);
        long threadId = Thread.currentThread().getId();
        Long token = lock.lockAndGetTokenAsync().get(10, TimeUnit.SECONDS);
        assertNotNull(token);
        assertTrue(lock.isHeldByThread(threadId));
        pool.submit(() -> {
            // Its own id does not own the lock...
            assertThrows(IllegalMonitorStateException.class, lock::unlock);
            // ...the captured one does.
            lock.unlockAsync(threadId).join();
            return null;
        }).get(10, TimeUnit.SECONDS);
        assertFalse(lock.isLocked());
        assertTrue(lock.leaseLost().isCancelled(), "the hold ended cleanly");
        ExecutionException e = assertThrows(ExecutionException.class, () -> lock.unlockAsync(threadId).get());
        assertTrue(e.getCause() instanceof IllegalMonitorStateException);
        // The async try variant with a captured thread id, for a thread that never
        // touches the lock itself.
        long other = threadId + 1_000_000;
        Long t2 = lock.tryLockAndGetTokenAsync(0, -1, TimeUnit.MILLISECONDS, other).get(10, TimeUnit.SECONDS);
        assertTrue(t2 > token);
        assertTrue(lock.isHeldByThread(other));
        lock.unlockAsync(other).get(10, TimeUnit.SECONDS);
    }

    @Test
    void failoverMovesOnFromAnUnreachableNode() throws Exception {
        String dead = Env.deadUrl();
        String r = Env.resource("failover");
        try (FenceviewClient cluster = FenceviewClient.builder().url(dead).url(Env.url()).apiKey(Env.prop("key")).build()) {
            FencedLock lock = cluster.getFencedLock(r);
            long last = 0;
            for (int i = 0; i < 3; i++) {
                Long t = lock.tryLockAndGetToken(0, 60, TimeUnit.SECONDS);
                assertNotNull(t, "try " + i);
                assertTrue(t > last);
                last = t;
                lock.unlock();
            }
        }
        try (FenceviewClient alone = FenceviewClient.builder().url(dead).build()) {
            FenceviewException e = assertThrows(FenceviewException.class, () -> alone.getFencedLock(r).tryLock());
            assertEquals(0, e.status(), "no answer: " + e);
            assertTrue(e.isTemporary());
        }
        assertThrows(IllegalArgumentException.class, () -> FenceviewClient.builder().url(Env.url()).url("ftp://x").build());
    }

    @Test
    void wrongCredentialsAndBadIdsAreRefused() {
        try (FenceviewClient anon = FenceviewClient.create(Env.url())) {
            FenceviewException e = assertThrows(FenceviewException.class, () -> anon.getFencedLock(Env.resource("anon")).tryLock());
            assertEquals(401, e.status());
            assertFalse(e.isTemporary());
        }
        assertThrows(InvalidRequestException.class, () -> c.getFencedLock(""));
        assertThrows(InvalidRequestException.class, () -> c.getFencedLock("a\nb"));
        assertThrows(InvalidRequestException.class, () -> c.getFencedLock("x".repeat(161)));
        // The bound is 160 bytes of UTF-8, not 160 chars.
        assertEquals(160, c.getFencedLock("é".repeat(80)).getName().getBytes(java.nio.charset.StandardCharsets.UTF_8).length);
        assertThrows(InvalidRequestException.class, () -> c.getFencedLock("é".repeat(81)));
        assertThrows(InvalidRequestException.class, () -> c.getFencedLock("\ud800x"), "a lone surrogate is not UTF-8");
        assertThrows(InvalidRequestException.class, () -> c.getFencedLock("a\u0085b"), "C1 controls too");
        // Odd but valid ids travel as one path segment.
        FencedLock odd = c.getFencedLock("../a b/%2F?#" + java.util.UUID.randomUUID());
        assertTrue(odd.tryLock());
        assertEquals(odd.getName(), c.getLockState(odd.getName()).resource());
        odd.unlock();
    }

    @Test
    void closeEndsEveryHold() throws Exception {
        FenceviewClient own = Env.client();
        FencedLock lock = own.getFencedLock(Env.resource("close"));
        lock.lock();
        CompletableFuture<LeaseLostException> lost = lock.leaseLost();
        own.close();
        assertTrue(lost.isDone() && !lost.isCompletedExceptionally(), "close reports the hold as lost");
        assertThrows(FenceviewException.class, lock::tryLock);
    }

    /** A Future that fails the test instead of hanging. */
    private static final class Future {
        private final java.util.concurrent.Future<Long> f;

        Future(java.util.concurrent.Future<Long> f) {
            this.f = f;
        }

        Long get() throws Exception {
            return f.get(30, TimeUnit.SECONDS);
        }
    }
}

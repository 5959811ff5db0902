package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The primitives against a real server: lock-delay, semaphores, multi-locks and elections. */
class PrimitivesTest {
    private FenceviewClient c;
    private FenceviewClient admin;

    @BeforeEach
    void setUp() {
        c = Env.client();
        admin = FenceviewClient.builder().url(Env.url()).apiKey(Env.prop("admin")).build();
    }

    @AfterEach
    void tearDown() {
        c.close();
        admin.close();
    }

    /** Force-unlocks resource as an admin: its holder is told of the loss, with its token. */
    private LeaseLostException forceLoss(String resource, long token, CompletableFuture<LeaseLostException> lost) throws Exception {
        assertTrue(admin.getFencedLock(resource).forceUnlock());
        LeaseLostException e = lost.get(10, TimeUnit.SECONDS);
        assertEquals(token, e.token());
        return e;
    }

    /** e is elected, then an admin force-unlocks its lock (name): e is told, with its term. */
    private long electedThenDeposed(LeaderElection e, String name) throws Exception {
        long term = e.campaign("x");
        forceLoss(name, term, e.leaseLost());
        return term;
    }

    private static Instant time(Map<String, Object> m, String key) {
        return Json.instant(m, key);
    }

    /**
     * Waits until the server counts a waiting multi-lock. It is not one of its locks'
     * waiters (it waits for all of them), but the gauge of waiting multi-locks counts
     * it; the tests of this class run one at a time.
     */
    private static void awaitMultiWaiter() throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create(Env.url() + "/metrics"))
                .header("Authorization", "Bearer " + Env.prop("admin")).build();
        Pattern p = Pattern.compile("(?m)^fenceview_waiters_by_kind\\{kind=\"multi\"\\} (\\d+)$");
        HttpClient http = HttpClient.newHttpClient();
        Env.until("a waiting multi-lock", () -> {
            Matcher m = p.matcher(http.send(req, HttpResponse.BodyHandlers.ofString()).body());
            assertTrue(m.find(), "no fenceview_waiters_by_kind{kind=\"multi\"} gauge");
            return Long.parseLong(m.group(1)) > 0;
        });
    }

    // ---- lock-delay ----

    @Test
    void lockDelayKeepsEveryoneOutUntilAvailableAt() throws Exception {
        String r = Env.resource("delay");
        FencedLock lock = c.getFencedLock(r).withLockDelay(Duration.ofSeconds(60));
        Long token = lock.tryLockAndGetToken(0, 200, TimeUnit.MILLISECONDS);
        assertNotNull(token);
        Instant expiresAt = time(Env.lockState(r), "expiresAt");
        FencedLock other = admin.getFencedLock(r);
        // Held, then, once the lease ran out unreleased, in its delay: never granted.
        LockHeldException[] seen = new LockHeldException[1];
        Env.until("the lease to run out into its delay", () -> {
            seen[0] = assertThrows(LockHeldException.class, () -> other.tryAcquire(0, -1, TimeUnit.MILLISECONDS));
            return seen[0] instanceof LockDelayException;
        });
        LockDelayException e = (LockDelayException) seen[0];
        assertEquals(expiresAt.plusSeconds(60), e.availableAt());
        assertEquals(409, e.status());
        assertEquals("lock-delay", e.getCode());
        assertNull(e.holder());
        assertTrue(lock.leaseLost().isCancelled() || lock.leaseLost().isDone());
        // The old holder is kept out too; the Redisson-shaped try answers null.
        assertNull(lock.tryLockAndGetToken());
        assertNull(other.tryLockAndGetToken());
        assertEquals(expiresAt.plusSeconds(60), c.getLockState(r).availableAt());
        // A force-expire ends the delay at once.
        other.forceUnlock();
        assertNull(c.getLockState(r).availableAt());
        FencingToken next = other.tryAcquire(0, -1, TimeUnit.MILLISECONDS);
        assertTrue(next.number() > token);
        other.unlock();
    }

    @Test
    void lockDelayedWaiterIsServedWhenTheDelayEnds() throws Exception {
        String r = Env.resource("delaywait");
        FencedLock lock = c.getFencedLock(r).withLockDelay(Duration.ofSeconds(1));
        Long token = lock.tryLockAndGetToken(0, 200, TimeUnit.MILLISECONDS);
        Instant availableAt = time(Env.lockState(r), "expiresAt").plusSeconds(1);
        Long next = admin.getFencedLock(r).tryLockAndGetToken(30, 5, TimeUnit.SECONDS);
        assertNotNull(next);
        assertTrue(next > token);
        Map<String, Object> st = Env.lockState(r);
        Instant grantedAt = time(st, "expiresAt").minusMillis((Long) st.get("leaseMs"));
        assertFalse(grantedAt.isBefore(availableAt), "granted at " + grantedAt + ", the delay ran to " + availableAt);
        assertThrows(InvalidRequestException.class, () -> lock.withLockDelay(Duration.ofSeconds(61)));
    }

    // ---- semaphores ----

    @Test
    void semaphoreGrantsTheLowestFreeSlotsUpToPermits() throws Exception {
        String name = Env.resource("sem");
        FencedSemaphore s = c.getSemaphore(name, 2);
        Permit p0 = s.acquire();
        Permit p1 = s.tryAcquire(0, 10, TimeUnit.SECONDS);
        assertEquals(List.of(0, 1), List.of(p0.slot(), p1.slot()));
        assertEquals(List.of(name + "#0", name + "#1"), List.of(p0.getId(), p1.getId()));
        assertEquals(p0.getToken(), Env.lockState(name + "#0").get("token"), "the slot's own lock has the permit's token");
        assertTrue(p0.isHeld());
        assertFalse(p0.leaseLost().isDone());
        // Both slots taken: no third permit.
        FencedSemaphore s2 = admin.getSemaphore(name, 2);
        assertNull(s2.tryAcquire());
        LockHeldException held = assertThrows(LockHeldException.class, () -> s2.tryAcquireOrThrow(0, -1, TimeUnit.SECONDS));
        assertTrue(held.getMessage().contains("no permit free"), held.getMessage());
        assertEquals(0, s2.availablePermits());
        assertEquals(2L, s2.getState().get("permits"));
        // A waiter gets the slot given back, with a new token of that slot.
        CompletableFuture<Permit> waiting = s2.tryAcquireAsync(30, -1, TimeUnit.SECONDS);
        Env.until("the semaphore's waiter", () -> (Long) s2.getState().get("waiters") > 0);
        CompletableFuture<LeaseLostException> lost0 = p0.leaseLost();
        p0.release();
        assertThrows(CancellationException.class, lost0::join, "a release never reports a lost lease");
        assertFalse(p0.isHeld());
        Permit p2 = waiting.get(30, TimeUnit.SECONDS);
        assertEquals(0, p2.slot());
        assertTrue(p2.getToken() > p0.getToken());
        // The server's fence knows the slot's tokens.
        assertTrue(c.fence(p2.getFencingToken()).accepted());
        assertFalse(c.fence(p0.getFencingToken()).accepted());
        assertThrows(IllegalMonitorStateException.class, p0::release);
        p1.release();
        p2.release();
        assertEquals(2, s2.availablePermits());
    }

    @Test
    void semaphoreOfAnotherPermitsCountIsAMismatchNotAWait() {
        String name = Env.resource("semcount");
        Permit p = c.getSemaphore(name, 3).acquire();
        PermitsMismatchException e = assertThrows(PermitsMismatchException.class, () -> c.getSemaphore(name, 4).tryAcquire(10, TimeUnit.SECONDS));
        assertEquals(409, e.status());
        assertEquals("permits-mismatch", e.getCode());
        assertEquals(3, e.permits(), "the server's count");
        assertThrows(InvalidRequestException.class, () -> c.getSemaphore("a#b", 2));
        assertThrows(InvalidRequestException.class, () -> c.getSemaphore(name, 0));
        assertThrows(InvalidRequestException.class, () -> c.getSemaphore(name, 1025));
        p.release();
    }

    @Test
    void semaphoreWatchdogRenewsTheSlotAndSignalsItsLoss() throws Exception {
        String name = Env.resource("semdog");
        // Short, but long enough that a loaded machine (load 8 on 2 cores was seen)
        // answers some renewal within the lease.
        long leaseMs = 2000;
        try (FenceviewClient shortLease = Env.client(Duration.ofMillis(leaseMs))) {
            Permit p = shortLease.getSemaphore(name, 1).acquire();
            // A contender waits on the server through three leases: it gets the slot
            // only if a renewal is missed.
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(3 * leaseMs);
            for (long left; (left = end - System.nanoTime()) > 0;) {
                Permit other = c.getSemaphore(name, 1).tryAcquire(TimeUnit.NANOSECONDS.toMillis(left) + 1, TimeUnit.MILLISECONDS);
                assertNull(other, () -> "the watchdog kept the slot; " + (p.leaseLost().isDone() ? p.leaseLost().join().getMessage() : "not lost"));
            }
            assertTrue(p.isHeld());
            CompletableFuture<LeaseLostException> lost = p.leaseLost();
            LeaseLostException e = forceLoss(p.getId(), p.getToken(), lost);
            assertEquals(p.getId(), e.resource());
            assertFalse(p.isHeld());
        }
    }

    /**
     * A permit whose lease was lost is released quietly by its holder, as a lock is
     * unlocked: whether the watchdog saw the loss first or the release is where the
     * client learns it. A permit released already still throws.
     */
    @Test
    void permitReleaseAfterALostLeaseIsQuiet() throws Exception {
        String name = Env.resource("semquiet");
        // Seen: a short watchdog lease, so a renewal is refused after the force-expire.
        try (FenceviewClient holder = Env.client(Duration.ofSeconds(3))) {
            FencedSemaphore sem = holder.getSemaphore(name, 2);
            Permit p = sem.acquire();
            CompletableFuture<LeaseLostException> lost = p.leaseLost();
            forceLoss(p.getId(), p.getToken(), lost);
            Permit next = c.getSemaphore(name, 2).acquire();
            p.release(); // the holder's finally: quiet
            assertFalse(p.isHeld());
            assertThrows(IllegalMonitorStateException.class, p::release, "one release too many");
            assertTrue(next.isHeld(), "the quiet release gave nothing back");
            next.release();
        }
        // Unseen: a watchdog lease so long that no renewal happens; the refused release tells.
        try (FenceviewClient holder = Env.client(Duration.ofMinutes(10))) {
            FencedSemaphore sem = holder.getSemaphore(name, 2);
            Permit p = sem.acquire();
            CompletableFuture<LeaseLostException> lost = p.leaseLost();
            Env.forceExpire(p.getId());
            assertFalse(lost.isDone(), "nothing has told the client yet");
            sem.release(p);
            assertEquals(p.getToken().longValue(), lost.get(10, TimeUnit.SECONDS).token(), "the refused release signals the loss");
            assertThrows(IllegalMonitorStateException.class, () -> sem.release(p), "one release too many");
        }
        // A permit released cleanly: releasing it again throws.
        Permit clean = c.getSemaphore(name, 2).acquire();
        clean.release();
        assertThrows(IllegalMonitorStateException.class, clean::release);
    }

    @Test
    void semaphoreSlotTokensPast2To53AreExact() throws Exception {
        String name = Env.resource("sembig");
        long floor = (1L << 53);
        assertEquals(200, resetWithBody(name + "#0", floor));
        Permit p = c.getSemaphore(name, 1).acquire();
        assertEquals(floor + 1, p.getToken());
        assertTrue(c.fence(p.getFencingToken()).accepted());
        p.release();
    }

    /** POST /v1/locks/{r}/reset {"floor"} as the admin; the status. */
    private static int resetWithBody(String r, long floor) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create(Env.url() + "/v1/locks/" + FenceviewClient.segment(r) + "/reset"))
                .header("Authorization", "Bearer " + Env.prop("admin")).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"floor\":" + floor + "}")).build();
        return HttpClient.newHttpClient().send(req, HttpResponse.BodyHandlers.ofString()).statusCode();
    }

    // ---- multi-locks ----

    @Test
    void multiLockTakesAllOrNothing() throws Exception {
        String x = Env.resource("mx");
        String y = Env.resource("my");
        String z = Env.resource("mz");
        FencedMultiLock m = c.getMultiLock(x, y);
        Map<String, Long> tokens = m.lockAndGetTokens();
        assertEquals(List.of(x, y), List.copyOf(tokens.keySet()));
        assertEquals(tokens.get(y), Env.lockState(y).get("token"));
        assertEquals(tokens, m.getTokens());
        assertEquals(c.holderId(Thread.currentThread().getId()), Env.lockState(x).get("holder"));
        // y is held: the other gets neither y nor z.
        FencedMultiLock other = admin.getMultiLock(z, y);
        assertNull(other.tryLockAndGetTokens());
        LockHeldException e = assertThrows(LockHeldException.class, () -> other.tryAcquire(0, -1, TimeUnit.SECONDS));
        assertEquals("lock-held", e.getCode());
        assertEquals(1, e.held().size());
        assertEquals(y, e.held().get(0).resource());
        assertEquals(Env.lockState(y).get("holder"), e.held().get(0).holder());
        assertEquals(false, Env.lockState(z).get("locked"), "nothing was taken");
        // A waiting multi-lock holds nothing while it waits, and gets both at once.
        CompletableFuture<Map<String, Long>> waiting = other.tryLockAndGetTokensAsync(30, -1, TimeUnit.SECONDS, 7);
        awaitMultiWaiter();
        assertEquals(false, Env.lockState(z).get("locked"), "the waiter took z early");
        CompletableFuture<LeaseLostException> lost = m.leaseLost();
        m.unlock();
        assertThrows(CancellationException.class, lost::join);
        assertTrue(m.getTokens().isEmpty());
        Map<String, Long> theirs = waiting.get(30, TimeUnit.SECONDS);
        assertTrue(theirs.get(y) > tokens.get(y));
        assertEquals(admin.holderId(7), Env.lockState(z).get("holder"));
        assertThrows(IllegalMonitorStateException.class, m::unlock, "this thread holds none of them any more");
        admin.getMultiLock(z, y).unlockAsync(7).get(10, TimeUnit.SECONDS);
        assertThrows(InvalidRequestException.class, () -> c.getMultiLock(x, x));
    }

    @Test
    void multiLockIsRenewedTogetherAndLosingOneIsSignalled() throws Exception {
        String x = Env.resource("mdx");
        String y = Env.resource("mdy");
        // Short, but long enough that a loaded machine (load 8 on 2 cores was seen)
        // answers some renewal within the lease.
        long leaseMs = 2000;
        try (FenceviewClient shortLease = Env.client(Duration.ofMillis(leaseMs))) {
            FencedMultiLock m = shortLease.getMultiLock(x, y);
            Map<String, Long> tokens = m.lockAndGetTokens();
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(3 * leaseMs);
            for (long left; (left = end - System.nanoTime()) > 0;) {
                assertNull(c.getMultiLock(y).tryLockAndGetTokens(TimeUnit.NANOSECONDS.toMillis(left) + 1, TimeUnit.MILLISECONDS),
                        "the watchdog kept y");
            }
            assertEquals(tokens.get(x), Env.lockState(x).get("token"));
            assertEquals(true, Env.lockState(x).get("locked"), "the watchdog kept x");
            CompletableFuture<LeaseLostException> lost = m.leaseLost();
            assertFalse(lost.isDone());
            assertTrue(admin.getFencedLock(y).forceUnlock());
            assertNotNull(lost.get(10, TimeUnit.SECONDS));
            assertEquals(tokens, m.getTokens(), "the tokens stay, to report the loss (guards refuse them)");
            assertEquals(tokens.get(y).longValue(), m.getFencingToken(y).number());
            // The holder's unlock is quiet and gives x back; another thread's throws.
            ExecutionException other = assertThrows(ExecutionException.class,
                    () -> CompletableFuture.runAsync(m::unlock).get(10, TimeUnit.SECONDS));
            assertTrue(other.getCause() instanceof IllegalMonitorStateException, other.getCause().toString());
            m.unlock();
            assertTrue(m.getTokens().isEmpty());
            assertEquals(false, Env.lockState(x).get("locked"), "x was released at the unlock");
            assertThrows(IllegalMonitorStateException.class, m::unlock, "one unlock too many");
        }
    }

    // ---- elections ----

    @Test
    void electionCampaignProclaimResign() throws Exception {
        String name = Env.resource("elect");
        LeaderElection e1 = c.getLeaderElection(name, "c1");
        LeaderElection e2 = admin.getLeaderElection(name, "c2");
        assertEquals(Optional.empty(), e1.leader());
        assertFalse(e1.isLeader());
        long term = e1.campaign("v1");
        assertEquals(term, e1.getTerm());
        assertTrue(e1.isLeader());
        assertEquals(term, Env.lockState(name).get("token"), "the term is the lock's token");
        assertTrue(c.fence(e1.getFencingToken()).accepted());
        Leader l = e2.leader().orElseThrow();
        assertEquals(List.of("c1", "v1", term), List.of(l.candidate(), l.value(), l.term()));
        LockHeldException held = assertThrows(LockHeldException.class, () -> e2.tryCampaignOrThrow("v2", 0, -1, TimeUnit.SECONDS));
        assertEquals("c1", held.holder());
        assertEquals("lock-held", held.getCode());
        assertNull(e2.tryCampaign("v2", 0, TimeUnit.SECONDS));
        assertThrows(IllegalMonitorStateException.class, () -> e2.proclaim("nope"));
        Leader p = e1.proclaim("v1b");
        assertEquals(List.of("v1b", term), List.of(p.value(), p.term()));
        // c2 waits its turn and is elected, with a new term, when c1 resigns.
        CompletableFuture<Long> waiting = e2.campaignAsync("v2");
        Env.awaitWaiter(name);
        CompletableFuture<LeaseLostException> lost = e1.leaseLost();
        e1.resign();
        assertThrows(CancellationException.class, lost::join, "a resign is no lost lease");
        assertFalse(e1.isLeader());
        long term2 = waiting.get(30, TimeUnit.SECONDS);
        assertTrue(term2 > term);
        assertTrue(c.fence(e2.getFencingToken()).accepted());
        assertFalse(c.fence(new FencingToken(name, term, "", "", "", "")).accepted(), "the deposed leader's term is refused");
        assertEquals("c2", e1.leader().orElseThrow().candidate());
        assertThrows(IllegalMonitorStateException.class, e1::resign);
        e2.resign();
        assertEquals(Optional.empty(), e2.leader());
    }

    @Test
    void electionObserveFollowsEveryChangeInOrder() throws Exception {
        String name = Env.resource("observe");
        LinkedBlockingQueue<Optional<Leader>> seen = new LinkedBlockingQueue<>();
        LeaderElection.Observation o = admin.getLeaderElection(name).observe(seen::add);
        try {
            assertEquals(Optional.empty(), next(seen), "nobody leads at first");
            LeaderElection e1 = c.getLeaderElection(name, "c1");
            long t1 = e1.campaign("one");
            assertEquals(List.of("c1", "one", t1), pick(next(seen)));
            e1.proclaim("two");
            assertEquals(List.of("c1", "two", t1), pick(next(seen)));
            e1.resign();
            assertEquals(Optional.empty(), next(seen));
            LeaderElection e2 = c.getLeaderElection(name, "c2");
            long t2 = e2.campaign("three");
            assertEquals(List.of("c2", "three", t2), pick(next(seen)));
            admin.getFencedLock(name).forceUnlock();
            assertEquals(Optional.empty(), next(seen), "a forced end of the lease is no leader");
        } finally {
            o.close();
        }
    }

    private static Optional<Leader> next(LinkedBlockingQueue<Optional<Leader>> q) throws InterruptedException {
        Optional<Leader> l = q.poll(30, TimeUnit.SECONDS);
        assertNotNull(l, "no leader change observed");
        return l;
    }

    private static List<Object> pick(Optional<Leader> l) {
        Leader x = l.orElseThrow();
        return List.of(x.candidate(), x.value(), x.term());
    }

    @Test
    void electionLeaseLostWhenDeposed() throws Exception {
        String name = Env.resource("elost");
        try (FenceviewClient leaderClient = Env.client(Duration.ofMillis(1500))) {
            LeaderElection e = leaderClient.getLeaderElection(name, "leader");
            electedThenDeposed(e, name);
            assertFalse(e.isLeader());
            assertNull(e.getTerm());
            assertThrows(IllegalMonitorStateException.class, () -> e.proclaim("y"));
        }
    }

    /**
     * A leader whose lease was lost resigns quietly, as a lock's holder unlocks:
     * whether the watchdog saw the loss first or the resign is where the client learns
     * it. A candidate that does not lead (never won, or resigned already) still gets a
     * NotLeaderException, an IllegalMonitorStateException.
     */
    @Test
    void resignAfterALostLeaseIsQuiet() throws Exception {
        String name = Env.resource("equiet");
        // Seen: a short watchdog lease, so a renewal is refused after the force-expire.
        try (FenceviewClient leaderClient = Env.client(Duration.ofSeconds(3))) {
            LeaderElection e = leaderClient.getLeaderElection(name, "old");
            long term = electedThenDeposed(e, name);
            LeaderElection next = c.getLeaderElection(name, "new");
            long newTerm = next.campaign("y");
            e.resign(); // the old leader's finally: quiet
            assertThrows(NotLeaderException.class, e::resign, "one resign too many");
            assertEquals("new", next.leader().orElseThrow().candidate(), "the quiet resign deposed nobody");
            assertTrue(newTerm > term);
            next.resign();
        }
        // Unseen: a watchdog lease so long that no renewal happens; the refused resign tells.
        try (FenceviewClient leaderClient = Env.client(Duration.ofMinutes(10))) {
            LeaderElection e = leaderClient.getLeaderElection(name, "old");
            long term = e.campaign("x");
            CompletableFuture<LeaseLostException> lost = e.leaseLost();
            Env.forceExpire(name);
            assertFalse(lost.isDone(), "nothing has told the client yet");
            e.resign();
            assertEquals(term, lost.get(10, TimeUnit.SECONDS).token(), "the refused resign signals the loss");
            assertThrows(NotLeaderException.class, e::resign, "one resign too many");
        }
        // A candidate that never led.
        assertThrows(NotLeaderException.class, c.getLeaderElection(name, "never")::resign);
    }
}

package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The real server's refusal codes, as typed exceptions. The ownership codes
 * (not-owner, not-held, lease-expired) cannot be inferred from a status: each
 * assertion of one is the server's own code arriving.
 */
class RefusalCodesTest {
    private FenceviewClient c;

    @BeforeEach
    void setUp() {
        c = Env.client();
    }

    @AfterEach
    void tearDown() {
        c.close();
    }

    @Test
    void lockHeld() throws Exception {
        String r = Env.resource("code-held");
        FencedLock lock = c.getFencedLock(r);
        lock.lock();
        try (FenceviewClient other = Env.client()) {
            LockHeldException e = assertThrows(LockHeldException.class, () -> other.getFencedLock(r).tryAcquire(0, -1, TimeUnit.SECONDS));
            assertEquals("lock-held", e.getCode());
            assertEquals(c.holderId(Thread.currentThread().getId()), e.holder());
        } finally {
            lock.unlock();
        }
    }

    @Test
    void notOwnerAndNotHeld() throws Exception {
        String r = Env.resource("code-owner");
        FencedLock lock = c.getFencedLock(r);
        NotHeldException free = assertThrows(NotHeldException.class, lock::unlock, "a free lock");
        assertEquals("not-held", free.getCode());
        assertEquals(r, free.resource());
        lock.lock();
        ExecutionException e = assertThrows(ExecutionException.class, () -> CompletableFuture.runAsync(lock::unlock).get(10, TimeUnit.SECONDS));
        NotOwnerException notOwner = assertInstanceOf(NotOwnerException.class, e.getCause(), "another thread's unlock");
        assertEquals("not-owner", notOwner.getCode());
        lock.unlock();
    }

    /**
     * A force-expired lease: the watchdog's renewal is refused with lease-expired (the
     * lost lease's cause), the holder's unlock is quiet, and one unlock too many is
     * told lease-expired by the server.
     */
    @Test
    void leaseExpired() throws Exception {
        String r = Env.resource("code-expired");
        try (FenceviewClient holder = Env.client(Duration.ofSeconds(3))) {
            FencedLock lock = holder.getFencedLock(r);
            lock.lock();
            CompletableFuture<LeaseLostException> lost = lock.leaseLost();
            Env.forceExpire(r);
            LeaseLostException why = lost.get(10, TimeUnit.SECONDS);
            LeaseExpiredException cause = assertInstanceOf(LeaseExpiredException.class, why.getCause(), why.toString());
            assertEquals("lease-expired", cause.getCode());
            lock.unlock();
            LeaseExpiredException again = assertThrows(LeaseExpiredException.class, lock::unlock);
            assertEquals("lease-expired", again.getCode());
        }
    }

    @Test
    void fenceReason() {
        String r = Env.resource("code-fence");
        FencedLock lock = c.getFencedLock(r);
        lock.lock();
        FencingToken older = lock.getFencingToken();
        lock.unlock();
        lock.lock();
        FencingToken newer = lock.getFencingToken();
        lock.unlock();
        assertTrue(c.fence(newer).accepted());
        Decision d = c.fence(older);
        assertFalse(d.accepted());
        assertEquals(Decision.STALE_TOKEN, d.reason());
        assertEquals(newer.number(), d.required());
        FencedOutException e = d.toException(r);
        assertNotNull(e);
        assertEquals("stale-token", e.getCode());
    }

    /** The server refuses an unknown body field by name; nothing is acquired. */
    @Test
    void unknownField() throws Exception {
        var req = java.net.http.HttpRequest.newBuilder(java.net.URI.create(Env.url() + "/v1/locks/" + FenceviewClient.segment(Env.resource("code-field")) + "/acquire"))
                .header("Authorization", "Bearer " + Env.prop("key")).header("Content-Type", "application/json")
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{\"holder\":\"h\",\"lease\":5000}")).build();
        var resp = java.net.http.HttpClient.newHttpClient().send(req, java.net.http.HttpResponse.BodyHandlers.ofString());
        var a = new FenceviewClient.Answer(resp.statusCode(), Json.parseObject(resp.body()), resp.headers());
        InvalidRequestException e = assertInstanceOf(InvalidRequestException.class, a.failure("acquire"));
        assertEquals("unknown-field", e.getCode());
        assertEquals("lease", e.field());
    }
}

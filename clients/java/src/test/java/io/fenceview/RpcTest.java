package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Locks over the RPC stream (rpc(true)): the same answers and exceptions as over HTTP. */
class RpcTest {
    private FenceviewClient c;
    private ExecutorService pool;

    @BeforeEach
    void setUp() {
        c = FenceviewClient.builder().url(Env.url()).apiKey(Env.prop("key")).rpc(true)
                .lockWatchdogTimeout(Duration.ofSeconds(2)).build();
        pool = Executors.newFixedThreadPool(8);
    }

    @AfterEach
    void tearDown() {
        pool.shutdownNow();
        c.close();
    }

    @Test
    void lockUnlockRenewAndRefusalsGoOverTheStream() throws Exception {
        String r = Env.resource("rpc");
        FencedLock lock = c.getFencedLock(r);
        Long first = lock.lockAndGetToken();
        Long second = lock.lockAndGetToken();
        assertTrue(second > first);
        assertTrue(TokenVerifier.fetch(c).verify(lock.getFencingToken()), "a signed grant");
        long answered = c.rpcSession().answered();
        assertTrue(answered >= 2, "the grants came over the stream: " + answered);

        try (FenceviewClient other = Env.client()) {
            LockHeldException held = assertThrows(LockHeldException.class, () -> other.getFencedLock(r).tryAcquire(0, -1, TimeUnit.SECONDS));
            assertEquals("lock-held", held.getCode());
            // A contender waits on the server for three of the holder's leases: only
            // the watchdog's renewals, over the stream, keep it out.
            assertNull(other.getFencedLock(r).tryLockAndGetToken(6, TimeUnit.SECONDS), "the watchdog kept the lock");
        }
        assertTrue(c.rpcSession().answered() > answered, "renewals came over the stream");
        ExecutionException e = assertThrows(ExecutionException.class, () -> pool.submit(lock::unlock).get(10, TimeUnit.SECONDS));
        assertEquals("not-owner", assertInstanceOf(NotOwnerException.class, e.getCause()).getCode());

        // A waiter (another thread, same stream) is served at the unlock.
        CompletableFuture<Long> waiter = CompletableFuture.supplyAsync(() -> lock.tryLockAndGetToken(30, TimeUnit.SECONDS), pool);
        lock.unlock();
        lock.unlock();
        Long next = waiter.get(30, TimeUnit.SECONDS);
        assertNotNull(next);
        assertTrue(next > second);
    }

    @Test
    void manyThreadsShareTheStream() throws Exception {
        List<Future<Long>> runs = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            String r = Env.resource("rpc-many-" + t);
            runs.add(pool.submit(() -> {
                FencedLock lock = c.getFencedLock(r);
                long last = 0;
                for (int i = 0; i < 20; i++) {
                    Long token = lock.tryLockAndGetToken(10, TimeUnit.SECONDS);
                    assertNotNull(token);
                    assertTrue(token > last);
                    last = token;
                    lock.unlock();
                }
                return last;
            }));
        }
        for (Future<Long> f : runs) {
            assertEquals(20, f.get(60, TimeUnit.SECONDS), "every cycle took the next token");
        }
        assertTrue(c.rpcSession().answered() >= 8 * 40);
        // A broken stream: the next call opens a new one.
        RpcSession broken = c.rpcSession();
        broken.close();
        FencedLock lock = c.getFencedLock(Env.resource("rpc-again"));
        assertTrue(lock.tryLock());
        assertTrue(c.rpcSession() != broken && c.rpcSession().answered() == 1, "a new stream carried it");
        lock.unlock();
    }
}

package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link FenceviewClient#getReadWriteLock}: readers of one phase hold together and
 * share a token; a writer waits for them and takes a larger one. A reader's token is
 * signed as shared: fit for reads, refused for writes.
 */
class ReadWriteLockTest {
    @Test
    void readersShareAPhaseAndWritersComeAfter() throws Exception {
        for (boolean rpc : new boolean[] {false, true}) {
            ExecutorService other = Executors.newSingleThreadExecutor();
            try (FenceviewClient c = FenceviewClient.builder().url(Env.url()).apiKey(Env.prop("key")).rpc(rpc).build()) {
                String r = Env.resource("rw");
                FencedReadWriteLock rw = c.getReadWriteLock(r);
                Long mine = rw.readLock().tryLockAndGetToken(0, 60, TimeUnit.SECONDS);
                assertNotNull(mine);
                // Another thread is another holder: it joins the read phase, same token.
                Long theirs = CompletableFuture.supplyAsync(() -> rw.readLock().tryLockAndGetToken(0, 60, TimeUnit.SECONDS), other)
                        .get(30, TimeUnit.SECONDS);
                assertEquals(mine, theirs, "readers of one phase share its token");
                FencingToken t = rw.readLock().getFencingToken();
                assertTrue(t.shared());
                assertNull(rw.writeLock().tryLockAndGetToken(0, 60, TimeUnit.SECONDS), "no upgrade, and readers hold it");

                TokenVerifier v = TokenVerifier.fetch(c);
                assertTrue(v.verify(t), "a reader's token verifies as a shared grant");
                assertFalse(v.verify(r, t.number(), t.signature()), "and not as a writer's");
                assertEquals(TokenVerifier.Mode.SHARED, v.mode(r, t.number(), t.signature(), true));
                assertTrue(c.fence(t).accepted(), "the server's fence takes it for a read");
                FencingToken asWriter = new FencingToken(r, t.number(), t.signature(), t.keyId(), t.issuer(), t.scope());
                assertEquals(Decision.SHARED_TOKEN, c.fence(asWriter).reason());

                rw.readLock().unlock();
                CompletableFuture.runAsync(() -> rw.readLock().unlock(), other).get(30, TimeUnit.SECONDS);
                Long w = rw.writeLock().tryLockAndGetToken(10, 60, TimeUnit.SECONDS);
                assertNotNull(w);
                assertTrue(w > mine, "the writer's " + w + " after the readers' " + mine);
                assertFalse(rw.writeLock().getFencingToken().shared());
                rw.writeLock().unlock();
            } finally {
                other.shutdownNow();
            }
        }
    }
}

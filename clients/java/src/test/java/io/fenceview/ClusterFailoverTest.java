package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A real two-node fenceview cluster (over etcd, started by the Go driver): the
 * client is given both nodes, the leader first; the leader is stopped while the
 * client holds a lock, and the watchdog keeps the lease through the other node.
 */
class ClusterFailoverTest {
    @Test
    void watchdogRenewsThroughTheOtherNodeWhenTheLeaderStops() throws Exception {
        String leader = Env.prop("cluster.leader");
        String follower = Env.prop("cluster.follower");
        String r = Env.resource("cluster");
        // A lease long enough to outlast the election of a new leader (the
        // nodes' election TTL is 1 s), renewed every 2 s.
        try (FenceviewClient c = FenceviewClient.builder().url(leader).url(follower)
                .lockWatchdogTimeout(Duration.ofSeconds(6)).build()) {
            FencedLock lock = c.getFencedLock(r);
            Long token = lock.lockAndGetToken();
            assertNotNull(token);
            CompletableFuture<LeaseLostException> lost = lock.leaseLost();
            long ttlBefore = lock.remainTimeToLive();

            HttpResponse<String> stopped = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                    URI.create(Env.prop("cluster.control") + "/stop?url=" + leader))
                    .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, stopped.statusCode(), stopped.body());

            // Wait, by the cluster's state as the surviving node tells it, until a
            // renewal sent after the stop has extended the lease: the remaining time
            // is then above what was left when the leader went away.
            long stopAt = System.nanoTime();
            long deadline = stopAt + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                assertFalse(lost.isDone(), () -> "the lease was lost during the failover: " + lost.getNow(null));
                long left = ttlOrMinus(c, r);
                long since = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stopAt);
                if (left > ttlBefore - since + 100 && left > 0 && since > 0) {
                    break;
                }
                assertTrue(System.nanoTime() < deadline, "no renewal reached the surviving node");
                Thread.onSpinWait();
            }
            assertEquals(token, lock.getToken(), "renewals keep the token");
            assertTrue(lock.isHeldByCurrentThread());
            lock.unlock();
            assertTrue(lost.isCancelled(), "the hold ended by its unlock, not by a lost lease");
            Long next = lock.tryLockAndGetToken(10, TimeUnit.SECONDS);
            assertTrue(next > token, "tokens keep rising across the leader change: " + token + " then " + next);
            lock.unlock();
        }
    }

    /** The lease left, or -1 while the cluster has no leader to answer (503). */
    private static long ttlOrMinus(FenceviewClient c, String r) {
        try {
            LockState s = c.getLockState(r);
            return s.locked() ? s.remainingMs() : -1;
        } catch (FenceviewException e) {
            if (!e.isTemporary()) {
                throw e;
            }
            return -1;
        }
    }
}

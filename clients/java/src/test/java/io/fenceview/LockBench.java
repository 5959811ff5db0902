package io.fenceview;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * Lock/unlock cycles per second from N threads against a fenceview server, each
 * cycle a tryLockAndGetToken (watchdog lease) and an unlock on one of 1024 resources
 * picked at random, as fenceload's grant mix does. Not a test; run it with
 *
 * <pre>
 * java -cp classes io.fenceview.LockBench http://127.0.0.1:8080 64 10000 [apiKey [warmupMillis [httpThreads]]]
 * </pre>
 */
public final class LockBench {
    private LockBench() {}

    public static void main(String[] args) throws Exception {
        String url = args[0];
        int threads = Integer.parseInt(args[1]);
        long millis = Long.parseLong(args[2]);
        String key = args.length > 3 ? args[3] : null;
        long warmup = args.length > 4 ? Long.parseLong(args[4]) : 5000;
        int resources = 1024;
        String prefix = "bench-" + Long.toHexString(System.nanoTime()) + "-";
        int pool = args.length > 5 ? Integer.parseInt(args[5]) : 0;
        FenceviewClient.Builder b = FenceviewClient.builder().url(url).apiKey(key == null || key.isEmpty() ? null : key);
        java.util.concurrent.ExecutorService exec = null;
        if (pool > 0) {
            exec = java.util.concurrent.Executors.newFixedThreadPool(pool, r -> {
                Thread t = new Thread(r, "bench-http");
                t.setDaemon(true);
                return t;
            });
            b.executor(exec);
        }
        try (FenceviewClient c = b.build()) {
            FencedLock[] locks = new FencedLock[resources];
            for (int i = 0; i < resources; i++) {
                locks[i] = c.getFencedLock(prefix + i);
            }
            LongAdder cycles = new LongAdder();
            LongAdder busy = new LongAdder();
            AtomicBoolean measuring = new AtomicBoolean();
            AtomicBoolean stop = new AtomicBoolean();
            Thread[] ts = new Thread[threads];
            for (int i = 0; i < threads; i++) {
                ts[i] = new Thread(() -> {
                    while (!stop.get()) {
                        FencedLock l = locks[ThreadLocalRandom.current().nextInt(resources)];
                        Long t = l.tryLockAndGetToken();
                        if (t == null) {
                            if (measuring.get()) {
                                busy.increment();
                            }
                            continue;
                        }
                        l.unlock();
                        if (measuring.get()) {
                            cycles.increment();
                        }
                    }
                });
                ts[i].start();
            }
            Thread.sleep(warmup); // the JIT and the connection pool
            var os = (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
            measuring.set(true);
            long start = System.nanoTime();
            long cpu0 = os.getProcessCpuTime();
            Thread.sleep(millis);
            measuring.set(false);
            long elapsed = System.nanoTime() - start;
            long cpu = os.getProcessCpuTime() - cpu0;
            stop.set(true);
            for (Thread t : ts) {
                t.join();
            }
            double secs = elapsed / 1e9;
            System.out.printf("java FencedLock (HTTP executor: %s): %d threads, %d resources, %.1f s: %.0f lock/unlock cycles/s (%d cycles, %d tries found the lock held); client CPU %.0f us per cycle%n",
                    pool > 0 ? pool + " threads" : "the JDK's", threads, resources, secs, cycles.sum() / secs, cycles.sum(), busy.sum(), cpu / 1e3 / Math.max(cycles.sum(), 1));
        }
    }
}

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
 * java -cp classes io.fenceview.LockBench http://127.0.0.1:8080 64 10000
 * </pre>
 */
public final class LockBench {
    private LockBench() {}

    public static void main(String[] args) throws Exception {
        String url = args[0];
        int threads = Integer.parseInt(args[1]);
        long millis = Long.parseLong(args[2]);
        String key = args.length > 3 ? args[3] : null;
        int resources = 1024;
        String prefix = "bench-" + Long.toHexString(System.nanoTime()) + "-";
        try (FenceviewClient c = FenceviewClient.builder().url(url).apiKey(key).build()) {
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
            Thread.sleep(1000); // warm-up: the JIT and the connection pool
            measuring.set(true);
            long start = System.nanoTime();
            Thread.sleep(millis);
            measuring.set(false);
            long elapsed = System.nanoTime() - start;
            stop.set(true);
            for (Thread t : ts) {
                t.join();
            }
            double secs = elapsed / 1e9;
            System.out.printf("java FencedLock: %d threads, %d resources, %.1f s: %.0f lock/unlock cycles/s (%d cycles, %d tries found the lock held)%n",
                    threads, resources, secs, cycles.sum() / secs, cycles.sum(), busy.sum());
        }
    }
}

package io.github.distlock.benchmarks;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.redisson.api.RLock;

/**
 * Hand-off latency on one contended key: the time from the moment the holder starts releasing to the moment the
 * next holder has the lock. JMH has no way to time an interval that starts in one thread and ends in another, so this
 * is a plain harness: N threads take the same lock (wait 30 s, watchdog), and whoever gets it reads the previous
 * holder's release timestamp.
 *
 * <p>A thread that re-takes the lock it just released is counted apart ("self"): that is Redisson's unfairness, not a
 * hand-off.
 */
public final class HandoffLatency {

    /** What takes the lock. */
    enum Impl {
        /** {@code RLock.tryLock(30 s, -1)} + {@code unlock()}. */
        REDISSON,
        /** The {@code @DistributedLock} method through the proxy. */
        ANNOTATION,
        /** The raw client, polling every millisecond (it has no pub/sub): for contrast only. */
        RAW
    }

    /** Results of one run; times in microseconds. */
    record Result(Impl impl, int threads, long handoffs, long selfRegrabs, double perSecond, double p50, double p90,
            double p99, double p999, double max) {
    }

    private final Impl impl;
    private final int threads;
    private volatile long releasedAt;
    private volatile long lastHolder = -1;
    private volatile boolean recording;
    private volatile boolean running = true;

    private HandoffLatency(Impl impl, int threads) {
        this.impl = impl;
        this.threads = threads;
    }

    /** Usage: {@code HandoffLatency [seconds] [threads,...] [redisson variant]}. */
    public static void main(String[] args) throws Exception {
        int seconds = (args.length > 0) ? Integer.parseInt(args[0]) : 10;
        int[] threadCounts = (args.length > 1) ? parseInts(args[1]) : new int[] {2, 8, 64};
        RedissonVariant variant = (args.length > 2)
                ? RedissonVariant.valueOf(args[2].toUpperCase(Locale.ROOT)) : RedissonVariant.DEFAULT;
        List<Result> results = new ArrayList<>();
        for (int threads : threadCounts) {
            for (Impl impl : Impl.values()) {
                results.add(run(impl, threads, Math.max(1, seconds / 3), seconds, variant));
            }
        }
        print(results, System.out);
    }

    static int[] parseInts(String csv) {
        return java.util.Arrays.stream(csv.split(",")).mapToInt(s -> Integer.parseInt(s.trim())).toArray();
    }

    /** Runs one case on a fresh Redis and application. */
    static Result run(Impl impl, int threads, int warmupSeconds, int seconds) throws Exception {
        return run(impl, threads, warmupSeconds, seconds, RedissonVariant.DEFAULT);
    }

    /** Runs one case on a fresh Redis and application whose Redisson client has {@code variant} applied. */
    static Result run(Impl impl, int threads, int warmupSeconds, int seconds, RedissonVariant variant) throws Exception {
        try (BenchEnvironment env = BenchEnvironment.start(variant)) {
            return new HandoffLatency(impl, threads).measure(env, warmupSeconds, seconds);
        }
    }

    private Result measure(BenchEnvironment env, int warmupSeconds, int seconds) throws Exception {
        Samples[] handoffs = new Samples[threads];
        long[] self = new long[threads];
        List<Thread> workers = new ArrayList<>();
        CountDownLatch done = new CountDownLatch(threads);
        Throwable[] failure = new Throwable[1];
        for (int t = 0; t < threads; t++) {
            int index = t;
            handoffs[t] = new Samples();
            Runnable body = () -> {
                long now = System.nanoTime();
                long previous = lastHolder;
                if (recording && previous >= 0) {
                    if (previous == index) {
                        self[index]++;
                    }
                    else {
                        handoffs[index].add(now - releasedAt);
                    }
                }
                lastHolder = index;
                releasedAt = System.nanoTime();
            };
            LockCycles.Cycle cycle = cycle(env, body);
            Thread worker = new Thread(() -> {
                try {
                    while (running) {
                        if (!cycle.run("hot")) {
                            throw new IllegalStateException("not acquired within the wait");
                        }
                    }
                }
                catch (Throwable ex) {
                    failure[0] = ex;
                    running = false;
                }
                finally {
                    done.countDown();
                }
            }, "handoff-" + t);
            workers.add(worker);
            worker.start();
        }
        TimeUnit.SECONDS.sleep(warmupSeconds);
        recording = true;
        long start = System.nanoTime();
        TimeUnit.SECONDS.sleep(seconds);
        recording = false;
        long elapsed = System.nanoTime() - start;
        running = false;
        if (!done.await(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("workers did not stop");
        }
        if (failure[0] != null) {
            throw new IllegalStateException(impl + " at " + threads + " threads failed", failure[0]);
        }
        Samples all = new Samples();
        long selfTotal = 0;
        for (int t = 0; t < threads; t++) {
            all.addAll(handoffs[t]);
            selfTotal += self[t];
        }
        all.sorted();
        double perSecond = (all.size() + selfTotal) * 1e9 / elapsed;
        return new Result(impl, threads, all.size(), selfTotal, perSecond, us(all.percentile(50)),
                us(all.percentile(90)), us(all.percentile(99)), us(all.percentile(99.9)), us(all.percentile(100)));
    }

    private LockCycles.Cycle cycle(BenchEnvironment env, Runnable body) {
        return switch (impl) {
            case REDISSON -> id -> {
                RLock lock = env.redisson().getLock(LockCycles.PREFIX + "bench:" + id);
                return LockCycles.waitWatchdogRun(lock, body);
            };
            case ANNOTATION -> {
                LockedService service = env.lockedService();
                yield id -> {
                    service.waitWatchdogRun(id, body);
                    return true;
                };
            }
            case RAW -> {
                RawLockClient raw = env.rawLocks();
                long wait = TimeUnit.MILLISECONDS.toNanos(LockCycles.WAIT_MS);
                yield id -> {
                    String key = LockCycles.PREFIX + "bench:" + id;
                    String token = RawLockClient.threadToken();
                    if (!raw.tryLock(key, token, wait)) {
                        return false;
                    }
                    try {
                        body.run();
                    }
                    finally {
                        raw.unlock(key, token);
                    }
                    return true;
                };
            }
        };
    }

    private static double us(long nanos) {
        return nanos / 1000.0;
    }

    static void print(List<Result> results, PrintStream out) {
        out.println();
        out.println("| impl | threads | acquisitions/s | self re-grabs | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs |");
        out.println("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (Result r : results) {
            long total = r.handoffs() + r.selfRegrabs();
            out.printf(Locale.ROOT, "| %s | %d | %.0f | %.1f %% | %.0f | %.0f | %.0f | %.0f | %.0f |%n",
                    r.impl().name().toLowerCase(Locale.ROOT), r.threads(), r.perSecond(),
                    (total == 0) ? 0.0 : 100.0 * r.selfRegrabs() / total, r.p50(), r.p90(), r.p99(), r.p999(), r.max());
        }
    }
}

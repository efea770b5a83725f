package io.github.distlock.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;

/**
 * Hammers a {@link LockProvider} from many threads that increment unsynchronized counters under its locks, and
 * counts what a broken lock shows: two holders inside at once, increments lost, releases refused, fencing tokens that
 * did not grow. The model is ShedLock's {@code FuzzTester} and Curator's threading test.
 *
 * <p>Every thread takes each key in turn, so all threads contend for all keys. Half the threads wait long for each lock;
 * the others retry with waits of a few milliseconds, so the "not acquired" path runs as often as the waiting one.
 * Leases alternate between the watchdog and a fixed lease far longer than the run, and, where the provider supports
 * it, every other acquisition is fenced. With several {@link #types exclusive types}, acquisitions of one key mix them:
 * locks of one key exclude each other across exclusive types.
 *
 * <pre>{@code
 * LockFuzzer.Result result = LockFuzzer.of(provider).threads(16).iterationsPerThread(25).keys("a", "b").run();
 * assertThat(result.overlaps()).isZero();
 * assertThat(result.lostUpdates()).isZero();
 * }</pre>
 */
public final class LockFuzzer {

    /**
     * What one run saw.
     *
     * @param threads threads that took locks
     * @param acquisitions locks taken and released
     * @param notAcquired acquisitions that came back empty (short waits) and were retried
     * @param expected increments the threads made under a lock
     * @param counted what the counters show: lower than {@code expected} when two holders overlapped
     * @param overlaps times a thread entered a key's critical section while another holder was inside
     * @param failedReleases releases that answered {@code false} although nothing took the lock away
     * @param tokenRegressions fenced holders whose token was not above the previous fenced holder's of that key
     * @param took how long the run took
     */
    public record Result(int threads, long acquisitions, long notAcquired, long expected, long counted, int overlaps,
            long failedReleases, long tokenRegressions, Duration took) {

        /** Increments that a concurrent holder overwrote. */
        public long lostUpdates() {
            return expected - counted;
        }
    }

    private final LockProvider provider;
    private int threads = 16;
    private int iterationsPerThread = 25;
    private List<String> keys = List.of("fuzz-a", "fuzz-b");
    private List<LockType> types = List.of(LockType.REENTRANT);
    private Duration timeout = Duration.ofMinutes(2);
    private Duration longWait = Duration.ofSeconds(30);

    private LockFuzzer(LockProvider provider) {
        this.provider = Objects.requireNonNull(provider, "provider");
    }

    /** A fuzzer for {@code provider}: 16 threads, 25 locks each, keys {@code fuzz-a} and {@code fuzz-b}, REENTRANT. */
    public static LockFuzzer of(LockProvider provider) {
        return new LockFuzzer(provider);
    }

    /** Threads taking locks at once; at least 2. */
    public LockFuzzer threads(int threads) {
        if (threads < 2) {
            throw new IllegalArgumentException("a fuzz test needs at least 2 threads, got " + threads);
        }
        this.threads = threads;
        return this;
    }

    /** Locks each thread takes and releases. */
    public LockFuzzer iterationsPerThread(int iterations) {
        if (iterations < 1) {
            throw new IllegalArgumentException("iterations must be positive, got " + iterations);
        }
        this.iterationsPerThread = iterations;
        return this;
    }

    /** The keys contended for (full keys, as the provider sees them). */
    public LockFuzzer keys(String... keys) {
        if (keys.length == 0) {
            throw new IllegalArgumentException("at least one key is needed");
        }
        this.keys = List.of(keys);
        return this;
    }

    /**
     * The exclusive lock types to mix on each key; those the provider does not support are left out.
     *
     * @throws IllegalArgumentException for {@link LockType#READ}, which is shared by design
     */
    public LockFuzzer types(LockType... types) {
        for (LockType type : types) {
            if (!type.exclusive()) {
                throw new IllegalArgumentException(type + " is shared: a mutual exclusion fuzz needs exclusive types");
            }
        }
        this.types = List.of(types);
        return this;
    }

    /** How long the whole run may take before it fails; 2 minutes by default. */
    public LockFuzzer timeout(Duration timeout) {
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        return this;
    }

    /**
     * Runs the threads and returns what they saw.
     *
     * @throws IllegalStateException when a thread failed (the backend threw) or the run outlasted its timeout
     * @throws InterruptedException when the calling thread was interrupted
     */
    public Result run() throws InterruptedException {
        List<LockType> usable = types.stream().filter(type -> provider.supports(type, false)).toList();
        if (usable.isEmpty()) {
            throw new IllegalStateException("the provider supports none of " + types);
        }
        Job[] jobs = keys.stream().map(Job::new).toArray(Job[]::new);
        AtomicLong acquisitions = new AtomicLong();
        AtomicLong notAcquired = new AtomicLong();
        AtomicLong failedReleases = new AtomicLong();
        AtomicLong tokenRegressions = new AtomicLong();
        AtomicInteger overlaps = new AtomicInteger();
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads, task -> {
            Thread thread = new Thread(task, "lock-fuzzer");
            thread.setDaemon(true);
            return thread;
        });
        long began = System.nanoTime();
        try {
            List<Future<?>> running = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                running.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < iterationsPerThread; i++) {
                        Job job = jobs[(thread + i) % jobs.length];
                        LockType type = usable.get((thread / 2 + i) % usable.size());
                        boolean fenced = (i % 2 == 1) && provider.supports(type, true);
                        LockHandle handle = acquire(job.key, type, fenced, thread % 2 == 0, i % 2 == 0, notAcquired);
                        job.enter(overlaps);
                        if (fenced) {
                            job.checkToken(handle.fencingToken(), tokenRegressions);
                        }
                        job.increment();
                        job.leave();
                        if (!handle.release()) {
                            failedReleases.incrementAndGet();
                        }
                        acquisitions.incrementAndGet();
                    }
                    return null;
                }));
            }
            start.countDown();
            long deadline = began + timeout.toNanos();
            for (Future<?> future : running) {
                future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
        }
        catch (ExecutionException ex) {
            throw new IllegalStateException("a fuzz thread failed", ex.getCause());
        }
        catch (TimeoutException ex) {
            throw new IllegalStateException("the fuzz run did not finish within " + timeout + " (" + acquisitions.get()
                    + " of " + ((long) threads * iterationsPerThread) + " locks taken): a lock was never released, or "
                    + "waiters were never woken" + holdersNow(), ex);
        }
        finally {
            pool.shutdownNow();
        }
        long counted = 0;
        for (Job job : jobs) {
            counted += job.counter;
        }
        return new Result(threads, acquisitions.get(), notAcquired.get(), (long) threads * iterationsPerThread, counted,
                overlaps.get(), failedReleases.get(), tokenRegressions.get(), Duration.ofNanos(System.nanoTime() - began));
    }

    /** Takes the lock, retrying when it comes back empty; a long wait or a short one. */
    /** Who holds each key now, where the provider can say (a hang's first clue); empty otherwise. */
    private String holdersNow() {
        if (!(provider instanceof io.github.distlock.spi.LockInspector inspector)) {
            return "";
        }
        StringBuilder holders = new StringBuilder("; holders now:");
        for (String key : keys) {
            try {
                holders.append(' ').append(key).append('=').append(inspector.holders(key));
            }
            catch (RuntimeException ex) {
                holders.append(' ').append(key).append(": ").append(ex);
            }
        }
        return holders.toString();
    }

    private LockHandle acquire(String key, LockType type, boolean fenced, boolean waitLong, boolean watchdog,
            AtomicLong notAcquired) {
        long leaseNanos = watchdog ? 0 : timeout.multipliedBy(2).toNanos();
        while (true) {
            long waitNanos = waitLong ? longWait.toNanos()
                    : TimeUnit.MILLISECONDS.toNanos(ThreadLocalRandom.current().nextInt(1, 6));
            LockHandle handle;
            try {
                handle = provider.acquire(new LockRequest(key, waitNanos, leaseNanos, fenced, type, LockOwner.next()))
                        .join();
            }
            catch (CompletionException ex) {
                throw (ex.getCause() instanceof RuntimeException cause) ? cause : ex;
            }
            if (handle != null) {
                return handle;
            }
            notAcquired.incrementAndGet();
            if (Thread.currentThread().isInterrupted()) {
                throw new IllegalStateException("interrupted while retrying '" + key + "'");
            }
        }
    }

    /** One key's critical section: state that only the lock protects. */
    private static final class Job {

        final String key;
        final AtomicInteger inside = new AtomicInteger();
        /**
         * Read and written without synchronization (volatile only so that the Java memory model is not what loses an
         * update): concurrent holders overwrite each other's increments, which is what the run counts.
         */
        volatile int counter;
        volatile long lastToken = -1;

        Job(String key) {
            this.key = key;
        }

        void enter(AtomicInteger overlaps) {
            if (inside.incrementAndGet() != 1) {
                overlaps.incrementAndGet();
            }
        }

        void leave() {
            inside.decrementAndGet();
        }

        void checkToken(long token, AtomicLong regressions) {
            if (token <= lastToken) {
                regressions.incrementAndGet();
            }
            lastToken = token;
        }

        /** Read, wait a little, write: the wait widens the window in which a second holder would lose an update. */
        void increment() {
            int value = counter;
            long until = System.nanoTime() + TimeUnit.MICROSECONDS.toNanos(50);
            while (System.nanoTime() - until < 0) {
                Thread.onSpinWait();
            }
            counter = value + 1;
        }
    }
}

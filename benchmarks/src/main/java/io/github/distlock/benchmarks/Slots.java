package io.github.distlock.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * The time slot of the plain harnesses that take turns ({@link HotKeyComparison}, {@link PermitsComparison},
 * {@link BackendComparison}, {@link ClusterComparison}): N threads start together and each calls its {@link Call} again
 * as soon as the previous one returns, until the slot's deadline; a thread starts no call after it, and the calls still
 * running then finish (their time counts in the slot's length). What a call measures is the harness's business.
 */
final class Slots {

    /** A thread that has failed this often stops, so a broken lock cannot spin through its slot. */
    static final int MAX_FAILURES_PER_THREAD = 1_000;

    private Slots() {
    }

    /** One call of a worker thread. */
    @FunctionalInterface
    interface Call {

        /**
         * Runs one cycle; {@code false} when the lock was not acquired within {@link LockCycles#WAIT_MS} (counted as a
         * failed call). A {@link RuntimeException} is a failed call too; anything else ends the slot with an error.
         */
        boolean run() throws Exception;
    }

    /** A slot's length, from before the first thread started to the return of the last call, and its failed calls. */
    record Outcome(long elapsedNanos, Map<String, Long> failures) {
    }

    /**
     * Runs {@code threads} threads, named {@code threadName + index}, for {@code millis} ms; thread {@code t} runs
     * {@code calls.apply(t)}, which is made just before the thread starts.
     *
     * @param what what runs, for the error when a call threw something other than a {@link RuntimeException}
     * @param describe the key a failed call is counted under
     */
    static Outcome run(String what, String threadName, int threads, long millis, IntFunction<Call> calls,
            Function<RuntimeException, String> describe) throws InterruptedException {
        Map<String, Long> failures = new ConcurrentHashMap<>();
        AtomicReference<Throwable> fatal = new AtomicReference<>();
        List<Thread> workers = new ArrayList<>();
        long start = System.nanoTime();
        long deadline = start + millis * 1_000_000L;
        for (int t = 0; t < threads; t++) {
            Call call = calls.apply(t);
            Thread worker = new Thread(() -> {
                int failed = 0;
                while (System.nanoTime() < deadline) {
                    try {
                        if (!call.run()) {
                            failures.merge("not acquired within " + LockCycles.WAIT_MS + " ms", 1L, Long::sum);
                            failed++;
                        }
                    }
                    catch (RuntimeException ex) {
                        // counted and reported, not fatal: a wait that runs out under load is a result too
                        failures.merge(describe.apply(ex), 1L, Long::sum);
                        failed++;
                    }
                    catch (Throwable ex) {
                        fatal.compareAndSet(null, ex);
                        return;
                    }
                    if (failed >= MAX_FAILURES_PER_THREAD) {
                        return;
                    }
                }
            }, threadName + t);
            workers.add(worker);
            worker.start();
        }
        for (Thread worker : workers) {
            worker.join();
        }
        // join() orders every worker's writes (its samples, the failures) before the caller's reads
        long elapsed = System.nanoTime() - start;
        if (fatal.get() != null) {
            throw new IllegalStateException(what + " failed", fatal.get());
        }
        return new Outcome(elapsed, failures);
    }

    /**
     * A slot's successful cycles: every thread's samples, one per cycle, merged, and how many each thread had.
     *
     * @param all the merged samples
     * @param perThread cycles per thread
     */
    record Cycles(Samples all, long[] perThread) {

        /** Merges the threads' samples; call after {@link #run} returned (its join() orders their writes first). */
        static Cycles of(Samples[] perThread) {
            long[] counts = new long[perThread.length];
            for (int t = 0; t < perThread.length; t++) {
                counts[t] = perThread[t].size();
            }
            return new Cycles(merge(perThread), counts);
        }
    }

    /** The threads' samples in one. */
    static Samples merge(Samples[] perThread) {
        Samples all = new Samples();
        for (Samples mine : perThread) {
            all.addAll(mine);
        }
        return all;
    }

    /** A failed call's key: the exception's simple name and message. */
    static String withMessage(RuntimeException ex) {
        return ex.getClass().getSimpleName() + ": " + ex.getMessage();
    }

    /** A failed call's key: the simple names of the exception and its causes, {@code A <- B <- C}. */
    static String causeChain(Throwable ex) {
        Throwable root = ex;
        StringBuilder text = new StringBuilder(ex.getClass().getSimpleName());
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
            text.append(" <- ").append(root.getClass().getSimpleName());
        }
        return text.toString();
    }
}

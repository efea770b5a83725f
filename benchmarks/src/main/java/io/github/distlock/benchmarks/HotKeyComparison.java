package io.github.distlock.benchmarks;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Collectors;

import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import io.github.distlock.testsupport.RespClient;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/**
 * The flash-sale key (issue 13): many threads on ONE key, lock + tiny critical section + unlock, for raw Redisson
 * {@code RLock} and {@code RFairLock} and for distlock's {@link LockTemplate} with {@link LockType#REENTRANT} and
 * {@link LockType#FAIR}, all in one run on one {@code redis-server} and one application (whose Redisson client the
 * raw cases share), plus each of them uncontended (one thread).
 *
 * <p>Per variant: cycles/s; acquisition latency (from asking for the lock to running the critical section)
 * p50/p99/p99.9; acquisitions per thread, min / max and their ratio (fairness); self re-grabs (a thread taking the lock
 * again right after itself) and the hand-off latency (from the previous holder's body end, where its release starts,
 * to the next, other, holder's body start; self re-grabs are not hand-offs); Redis commands per cycle ({@code INFO
 * commandstats} deltas, commands run inside scripts included, our own {@code INFO} calls not); redis-server CPU per
 * cycle ({@code utime + stime} from {@code /proc/<pid>/stat}) and the client JVM's process CPU per cycle (every thread
 * of it: workers, Netty, Redisson's timers, this harness).
 *
 * <p>As in {@link BackendComparison}, the variants take turns in time slots whose order rotates per round, so a burst of
 * load on the shared machine spreads over all of them; after one discarded warm-up slot each. Each slot starts its
 * threads together and ends when the last thread's call returns: a thread starts no call after the slot's deadline,
 * and the waiters still queued then finish theirs (that tail counts in the slot's time). Each variant has a key of its
 * own, so nothing one leaves behind (a fair lock's queue) meets another.
 *
 * <p>The critical section increments a counter with a plain read-then-write, and counts the threads inside it: were the
 * lock broken, overlaps and lost updates would show in the report (both must be 0).
 */
public final class HotKeyComparison {

    /** The locks compared; {@link #RLOCK} is the reference of the "vs RLock" ratios. */
    enum Variant {
        RLOCK("Redisson `RLock`"),
        RFAIRLOCK("Redisson `RFairLock`"),
        REENTRANT("distlock `REENTRANT`"),
        FAIR("distlock `FAIR`");

        final String label;

        Variant(String label) {
            this.label = label;
        }

        /** The distlock key of the variant's lock; the Redis key is {@code lock:} + this. */
        String key() {
            return "bench:hk-" + name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * What one run does.
     *
     * @param threads threads on the hot key
     * @param rounds rounds of one slot per variant
     * @param slotMillis length of one contended slot
     * @param warmupMillis the discarded warm-up slot per variant, contended and uncontended
     * @param uncontendedSlotMillis length of one uncontended (1 thread) slot
     */
    record Settings(int threads, int rounds, long slotMillis, long warmupMillis, long uncontendedSlotMillis) {

        Settings {
            if (threads < 2) {
                throw new IllegalArgumentException("threads must be at least 2 for a contended key, was " + threads);
            }
            if (rounds < 1 || slotMillis < 1 || warmupMillis < 0 || uncontendedSlotMillis < 1) {
                throw new IllegalArgumentException("rounds and slot lengths must be positive: " + rounds + ", "
                        + slotMillis + ", " + warmupMillis + ", " + uncontendedSlotMillis);
            }
        }

        /**
         * {@code seconds} of contended measurement per variant in {@code rounds} slots, half of that uncontended, and
         * a warm-up of half a slot (at least 0.5 s, at most 3 s).
         */
        static Settings of(int threads, int seconds, int rounds) {
            long slot = seconds * 1000L / rounds;
            return new Settings(threads, rounds, slot, Math.min(3_000, Math.max(500, slot / 2)), Math.max(250, slot / 2));
        }
    }

    /**
     * One variant's totals over all measured rounds at one thread count; times in nanoseconds, CPU in microseconds
     * per cycle.
     */
    record Result(Variant variant, int threads, long cycles, double cyclesPerSecond, double[] vsRLockPerRound,
            double vsRLock, long acquireP50, long acquireP99, long acquireP999, long minPerThread, long maxPerThread,
            long selfRegrabs, long handoffs, long handoffP50, long handoffP99, double commandsPerCycle,
            Map<String, Double> commandsByName, double redisCpuUsPerCycle, double clientCpuUsPerCycle, long overlaps,
            long lostUpdates, Map<String, Long> failures) {

        /** Acquisitions of the least served thread over those of the most served one; 1 for a single thread. */
        double fairness() {
            return (maxPerThread == 0) ? 0 : minPerThread / (double) maxPerThread;
        }

        /** Share of cycles in which the lock went back to the thread that had just released it. */
        double selfRegrabShare() {
            return (cycles == 0) ? 0 : selfRegrabs / (double) cycles;
        }

        boolean contended() {
            return threads > 1;
        }
    }

    /** A run's results (contended rows first, then uncontended), with the machine's load around it. */
    record Run(Settings settings, List<Result> results, String loadBefore, String loadAfter) {
    }

    private static final int MAX_FAILURES_PER_THREAD = 1_000;

    private HotKeyComparison() {
    }

    /**
     * Usage: {@code HotKeyComparison [threads] [seconds per variant] [rounds]}; defaults 64 threads, 10 s per variant in
     * 2 rounds of 5 s (plus 2.5 s each uncontended, and warm-ups): about 1.5 minutes.
     */
    public static void main(String[] args) throws Exception {
        int threads = (args.length > 0) ? Integer.parseInt(args[0]) : 64;
        int seconds = (args.length > 1) ? Integer.parseInt(args[1]) : 10;
        int rounds = (args.length > 2) ? Integer.parseInt(args[2]) : 2;
        print(run(Settings.of(threads, seconds, rounds)), System.out);
    }

    /** Starts Redis and the application, measures, and stops both, also when something fails. */
    static Run run(Settings settings) throws Exception {
        try (BenchEnvironment env = BenchEnvironment.start(RedissonVariant.DEFAULT)) {
            return measure(env, settings);
        }
    }

    /** Measures on a running environment: the contended slots (warm-up, then rounds), then the uncontended ones. */
    static Run measure(BenchEnvironment env, Settings settings) throws InterruptedException {
        String loadBefore = ClusterComparison.loadAverage();
        long redisPid = env.server().pid();
        long ticksPerSecond = BackendComparison.Setup.clockTicksPerSecond();
        List<Result> results = new ArrayList<>();
        results.addAll(measure(env, settings.threads(), settings.rounds(), settings.slotMillis(),
                settings.warmupMillis(), redisPid, ticksPerSecond));
        results.addAll(measure(env, 1, settings.rounds(), settings.uncontendedSlotMillis(),
                Math.min(1_000, settings.warmupMillis()), redisPid, ticksPerSecond));
        return new Run(settings, results, loadBefore, ClusterComparison.loadAverage());
    }

    private static List<Result> measure(BenchEnvironment env, int threads, int rounds, long slotMillis,
            long warmupMillis, long redisPid, long ticksPerSecond) throws InterruptedException {
        Variant[] variants = Variant.values();
        Totals[] totals = new Totals[variants.length];
        for (Variant variant : variants) {
            totals[variant.ordinal()] = new Totals(rounds, threads);
            if (warmupMillis > 0) {
                slot(env, variant, threads, warmupMillis);
            }
        }
        for (int r = 0; r < rounds; r++) {
            progress(threads + " threads, round " + (r + 1) + " of " + rounds + ", load average "
                    + ClusterComparison.loadAverage());
            for (int k = 0; k < variants.length; k++) {
                // rotate the order so that no variant always runs first or last
                Variant variant = variants[(r + k) % variants.length];
                Counters before = Counters.take(env.server().port(), redisPid, ticksPerSecond);
                Slot slot = slot(env, variant, threads, slotMillis);
                Counters after = Counters.take(env.server().port(), redisPid, ticksPerSecond);
                totals[variant.ordinal()].add(r, slot, before, after);
            }
        }
        Totals reference = totals[Variant.RLOCK.ordinal()];
        List<Result> results = new ArrayList<>();
        for (Variant variant : variants) {
            Totals t = totals[variant.ordinal()];
            double[] ratios = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                ratios[r] = t.roundRates[r] / reference.roundRates[r];
            }
            long cycles = t.acquire.size();
            Samples acquire = t.acquire.sorted();
            Samples handoffs = t.handoffs.sorted();
            Map<String, Double> byName = new LinkedHashMap<>();
            t.commandsByName.entrySet().stream().filter(e -> e.getValue() > 0)
                    .sorted(Map.Entry.<String, Long>comparingByValue(Comparator.reverseOrder()))
                    .forEach(e -> byName.put(e.getKey(), e.getValue() / (double) cycles));
            long commands = t.commandsByName.values().stream().mapToLong(Long::longValue).sum();
            results.add(new Result(variant, threads, cycles, t.rate(), ratios, t.rate() / reference.rate(),
                    acquire.percentile(50), acquire.percentile(99), acquire.percentile(99.9),
                    Arrays.stream(t.perThread).min().orElse(0), Arrays.stream(t.perThread).max().orElse(0),
                    t.selfRegrabs, handoffs.size(), handoffs.percentile(50), handoffs.percentile(99),
                    commands / (double) cycles, byName, t.redisCpuNanos / 1e3 / cycles, t.clientCpuNanos / 1e3 / cycles,
                    t.overlaps, t.lostUpdates, t.failures));
        }
        return results;
    }

    /** The cycle of {@code variant}: take the lock (wait up to 30 s, watchdog lease), run {@code body}, release. */
    private static LockCycles.Cycle cycle(BenchEnvironment env, Variant variant, Runnable body) {
        return switch (variant) {
            case RLOCK -> redisson(env.redisson(), variant, LockType.REENTRANT, body);
            case RFAIRLOCK -> redisson(env.redisson(), variant, LockType.FAIR, body);
            case REENTRANT -> template(env.lockTemplate(), variant, LockType.REENTRANT, body);
            case FAIR -> template(env.lockTemplate(), variant, LockType.FAIR, body);
        };
    }

    private static LockCycles.Cycle redisson(RedissonClient redisson, Variant variant, LockType type, Runnable body) {
        RLock lock = LockCycles.redissonLock(redisson, LockCycles.PREFIX + variant.key(), type);
        return id -> {
            if (!lock.tryLock(LockCycles.WAIT_MS, -1, TimeUnit.MILLISECONDS)) {
                return false;
            }
            try {
                body.run();
            }
            finally {
                lock.unlock();
            }
            return true;
        };
    }

    private static LockCycles.Cycle template(LockTemplate template, Variant variant, LockType type, Runnable body) {
        LockOptions options = new LockOptions(Duration.ofMillis(LockCycles.WAIT_MS), LockOptions.WATCHDOG, false)
                .withType(type);
        String key = variant.key();
        // execute throws LockAcquisitionException when the wait runs out: counted as a failed call by the worker
        return id -> {
            template.execute(key, options, () -> {
                body.run();
                return null;
            });
            return true;
        };
    }

    /** {@code threads} threads run {@code variant}'s cycle for {@code millis} ms (and finish the call they are in). */
    private static Slot slot(BenchEnvironment env, Variant variant, int threads, long millis)
            throws InterruptedException {
        Samples[] acquirePerThread = new Samples[threads];
        Samples[] handoffsPerThread = new Samples[threads];
        long[] selfRegrabs = new long[threads];
        AtomicInteger holders = new AtomicInteger();
        LongAdder overlaps = new LongAdder();
        // the counter the critical section increments non-atomically: a lost update shows a broken lock
        Counter counter = new Counter();
        AtomicInteger lastHolder = new AtomicInteger(-1);
        AtomicLong releaseStartedAt = new AtomicLong();
        Map<String, Long> failures = new ConcurrentHashMap<>();
        AtomicReference<Throwable> fatal = new AtomicReference<>();
        List<Thread> workers = new ArrayList<>();
        long start = System.nanoTime();
        long deadline = start + millis * 1_000_000L;
        for (int t = 0; t < threads; t++) {
            Samples acquire = acquirePerThread[t] = new Samples();
            Samples myHandoffs = handoffsPerThread[t] = new Samples();
            int self = t;
            // when this thread asked for the lock; written and read by this thread only
            long[] askedAt = new long[1];
            // Only a holder writes lastHolder and releaseStartedAt, and the lock orders the holders: the values read
            // are the previous holder's (were the lock broken, the overlap and lost-update counts would say so).
            Runnable body = () -> {
                long acquiredAt = System.nanoTime();
                if (holders.incrementAndGet() != 1) {
                    overlaps.increment();
                }
                acquire.add(acquiredAt - askedAt[0]);
                counter.value = counter.value + 1;
                int previous = lastHolder.getAndSet(self);
                if (previous == self) {
                    selfRegrabs[self]++;
                }
                else if (previous >= 0) {
                    myHandoffs.add(acquiredAt - releaseStartedAt.get());
                }
                holders.decrementAndGet();
                releaseStartedAt.set(System.nanoTime());
            };
            LockCycles.Cycle cycle = cycle(env, variant, body);
            Thread worker = new Thread(() -> {
                int failed = 0;
                while (System.nanoTime() < deadline) {
                    askedAt[0] = System.nanoTime();
                    try {
                        if (!cycle.run("hot")) {
                            failures.merge("not acquired within " + LockCycles.WAIT_MS + " ms", 1L, Long::sum);
                            failed++;
                        }
                    }
                    catch (RuntimeException ex) {
                        // counted and reported, not fatal: a wait that runs out under load is a result too
                        failures.merge(ex.getClass().getSimpleName() + ": " + ex.getMessage(), 1L, Long::sum);
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
            }, "hot-key-" + t);
            workers.add(worker);
            worker.start();
        }
        for (Thread worker : workers) {
            worker.join();
        }
        long elapsed = System.nanoTime() - start;
        if (fatal.get() != null) {
            throw new IllegalStateException(variant.label + " failed", fatal.get());
        }
        Samples acquire = new Samples();
        Samples handoffs = new Samples();
        long[] counts = new long[threads];
        for (int t = 0; t < threads; t++) {
            acquire.addAll(acquirePerThread[t]);
            handoffs.addAll(handoffsPerThread[t]);
            counts[t] = acquirePerThread[t].size();
        }
        // join() orders every worker's writes before these reads
        long lostUpdates = acquire.size() - counter.value;
        return new Slot(acquire, handoffs, counts, Arrays.stream(selfRegrabs).sum(), overlaps.sum(), lostUpdates,
                elapsed, failures);
    }

    /**
     * The critical section's shared state, incremented by whoever holds the lock with a read and a separate write
     * (volatile so that neither is kept in a register, yet not atomic: two holders at once can lose an update).
     */
    private static final class Counter {
        volatile long value;
    }

    /** One slot's samples: acquisition times, hand-off times, acquisitions per thread. */
    private record Slot(Samples acquire, Samples handoffs, long[] perThread, long selfRegrabs, long overlaps,
            long lostUpdates, long elapsedNanos, Map<String, Long> failures) {
    }

    /** Redis's command counts and CPU time, and the JVM's CPU time, at one moment. */
    record Counters(Map<String, Long> commands, long redisCpuNanos, long clientCpuNanos) {

        static Counters take(int port, long redisPid, long ticksPerSecond) {
            Map<String, Long> commands = new HashMap<>();
            for (String line : RespClient.callOnce(port, "INFO", "commandstats").toString().split("\r?\n")) {
                // cmdstat_evalsha:calls=3,usec=...; our own INFO calls are not the lock's
                if (line.startsWith("cmdstat_") && !line.startsWith("cmdstat_info:")) {
                    int from = line.indexOf("calls=") + 6;
                    commands.put(line.substring(8, line.indexOf(':')),
                            Long.parseLong(line.substring(from, line.indexOf(',', from))));
                }
            }
            long[] times = BackendComparison.Setup.procTimes(redisPid);
            if (times[0] + times[1] == 0) {
                throw new IllegalStateException("No CPU time in /proc/" + redisPid + "/stat: is redis-server running?");
            }
            var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
            return new Counters(commands, (times[0] + times[1]) * 1_000_000_000L / ticksPerSecond,
                    os.getProcessCpuTime());
        }
    }

    /** One variant's sums over the measured rounds. */
    private static final class Totals {

        final Samples acquire = new Samples();
        final Samples handoffs = new Samples();
        final double[] roundRates;
        final long[] perThread;
        long selfRegrabs;
        long overlaps;
        long lostUpdates;
        long elapsedNanos;
        final Map<String, Long> commandsByName = new HashMap<>();
        long redisCpuNanos;
        long clientCpuNanos;
        final Map<String, Long> failures = new LinkedHashMap<>();

        Totals(int rounds, int threads) {
            roundRates = new double[rounds];
            perThread = new long[threads];
        }

        void add(int round, Slot slot, Counters before, Counters after) {
            acquire.addAll(slot.acquire());
            handoffs.addAll(slot.handoffs());
            for (int t = 0; t < perThread.length; t++) {
                perThread[t] += slot.perThread()[t];
            }
            selfRegrabs += slot.selfRegrabs();
            overlaps += slot.overlaps();
            lostUpdates += slot.lostUpdates();
            elapsedNanos += slot.elapsedNanos();
            roundRates[round] = slot.acquire().size() * 1e9 / slot.elapsedNanos();
            after.commands().forEach((name, calls) -> commandsByName.merge(name,
                    calls - before.commands().getOrDefault(name, 0L), Long::sum));
            redisCpuNanos += after.redisCpuNanos() - before.redisCpuNanos();
            clientCpuNanos += after.clientCpuNanos() - before.clientCpuNanos();
            slot.failures().forEach((what, count) -> failures.merge(what, count, Long::sum));
        }

        double rate() {
            return acquire.size() * 1e9 / elapsedNanos;
        }
    }

    /** The table (contended rows, then uncontended ones), the commands by name, and the checks. */
    static void print(Run run, PrintStream out) {
        Settings s = run.settings();
        out.println();
        out.printf(Locale.ROOT, "One key, %d threads, %d round(s) of %.1f s per variant (uncontended: 1 thread, %.1f s "
                        + "slots), warm-up %.1f s; wait 30 s, watchdog lease; load average before: %s, after: %s%n",
                s.threads(), s.rounds(), s.slotMillis() / 1e3, s.uncontendedSlotMillis() / 1e3,
                s.warmupMillis() / 1e3, run.loadBefore(), run.loadAfter());
        out.println();
        out.println("| lock | threads | cycles/s | vs RLock (per round) | acquire p50 | p99 | p99.9 | per thread min / max "
                + "| min/max | self re-grabs | hand-off p50 | hand-off p99 | Redis cmds/cycle | top commands/cycle "
                + "| Redis CPU µs/cycle | client CPU µs/cycle |");
        out.println("|---|---:|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---:|---:|");
        for (Result r : run.results()) {
            String perRound = Arrays.stream(r.vsRLockPerRound()).mapToObj(v -> String.format(Locale.ROOT, "%.2f", v))
                    .collect(Collectors.joining(" "));
            String top = r.commandsByName().entrySet().stream().limit(4)
                    .map(e -> String.format(Locale.ROOT, "%s %.1f", e.getKey(), e.getValue()))
                    .collect(Collectors.joining(", "));
            out.printf(Locale.ROOT, "| %s | %d | %,.0f | %.2f (%s) | %s | %s | %s | %s | %s | %s | %s | %s | %.1f | %s "
                            + "| %.0f | %.0f |%n",
                    r.variant().label, r.threads(), r.cyclesPerSecond(), r.vsRLock(), perRound, ms(r.acquireP50()),
                    ms(r.acquireP99()), ms(r.acquireP999()),
                    r.contended() ? r.minPerThread() + " / " + r.maxPerThread() : "–",
                    r.contended() ? String.format(Locale.ROOT, "%.2f", r.fairness()) : "–",
                    r.contended() ? String.format(Locale.ROOT, "%.0f %%", 100 * r.selfRegrabShare()) : "–",
                    r.contended() ? ms(r.handoffP50()) : "–", r.contended() ? ms(r.handoffP99()) : "–",
                    r.commandsPerCycle(), top, r.redisCpuUsPerCycle(), r.clientCpuUsPerCycle());
        }
        out.println();
        out.println("Redis commands per cycle by name (INFO commandstats deltas; commands inside scripts included; "
                + "≥ 0.01 per cycle):");
        out.println();
        out.println("| lock | threads | commands per cycle |");
        out.println("|---|---:|---|");
        for (Result r : run.results()) {
            out.printf(Locale.ROOT, "| %s | %d | %s |%n", r.variant().label, r.threads(),
                    r.commandsByName().entrySet().stream().filter(e -> e.getValue() >= 0.005)
                            .map(e -> String.format(Locale.ROOT, "%s %.2f", e.getKey(), e.getValue()))
                            .collect(Collectors.joining(", ")));
        }
        out.println();
        out.println("Checks (must be 0): " + run.results().stream()
                .map(r -> String.format(Locale.ROOT, "%s at %d: %d overlaps, %d lost updates, %s", r.variant().label,
                        r.threads(), r.overlaps(), r.lostUpdates(),
                        r.failures().isEmpty() ? "0 failed calls" : "failed calls " + r.failures()))
                .collect(Collectors.joining("; ")));
    }

    /** Milliseconds with three significant digits or so: 0.123, 1.23, 12.3, 123. */
    static String ms(long nanos) {
        double ms = nanos / 1e6;
        String format = (ms >= 100) ? "%.0f ms" : (ms >= 10) ? "%.1f ms" : (ms >= 1) ? "%.2f ms" : "%.3f ms";
        return String.format(Locale.ROOT, format, ms);
    }

    private static void progress(String what) {
        System.err.printf(Locale.ROOT, "[%tT] hot key comparison: %s%n", System.currentTimeMillis(), what);
    }
}

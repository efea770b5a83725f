package io.github.distlock.benchmarks;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Collectors;

import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/**
 * The flash-sale key: many threads on ONE key, lock + tiny critical section + unlock, for raw Redisson
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
    record Settings(int threads, int rounds, long slotMillis, long warmupMillis, long uncontendedSlotMillis,
            List<Variant> variants) {

        Settings(int threads, int rounds, long slotMillis, long warmupMillis, long uncontendedSlotMillis) {
            this(threads, rounds, slotMillis, warmupMillis, uncontendedSlotMillis, List.of(Variant.values()));
        }

        Settings {
            if (variants.isEmpty()) {
                throw new IllegalArgumentException("at least one variant is needed, of " + Arrays.toString(Variant.values()));
            }
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
         * a warm-up of two slots (at least 1 s, at most 6 s; {@code -Dbench.hotkey.warmup-ms} overrides it). Not
         * shorter: on 2 cores the JIT compiler threads take a core for the first ~10 s of hot-key cycling, and the
         * acquisition p99 of a slot measured while they do was 1.5-2× a warm one's (see the per-round p99 line).
         */
        static Settings of(int threads, int seconds, int rounds) {
            return of(threads, seconds, rounds, List.of(Variant.values()));
        }

        /** As {@link #of(int, int, int)}, for some variants only (in their declared order). */
        static Settings of(int threads, int seconds, int rounds, List<Variant> variants) {
            long slot = seconds * 1000L / rounds;
            long warmup = Long.getLong("bench.hotkey.warmup-ms", Math.min(6_000, Math.max(1_000, 2 * slot)));
            return new Settings(threads, rounds, slot, warmup, Math.max(250, slot / 2),
                    variants.stream().distinct().sorted().toList());
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
            long lostUpdates, Map<String, Long> failures, String config, long[] acquireP99PerRound,
            double[] jitCpuUsPerCyclePerRound, double[] othersCoresPerRound) {

        /** The row's name: the variant's, and the Redisson configuration's when the run compares several. */
        String label() {
            return config.isEmpty() ? variant.label : variant.label + " [" + config + "]";
        }

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

    private HotKeyComparison() {
    }

    /**
     * Usage: {@code HotKeyComparison [threads] [seconds per variant] [rounds] [variants]}; defaults 64 threads, 10 s per
     * variant in 2 rounds of 5 s (plus 2.5 s each uncontended, and warm-ups): about 1.5 minutes. {@code variants}: a
     * comma-separated list of {@link Variant} names (say {@code RLOCK,FAIR}), all by default; the ratios are to
     * {@code RLOCK}, so without it they read "–".
     */
    public static void main(String[] args) throws Exception {
        int threads = (args.length > 0) ? Integer.parseInt(args[0]) : 64;
        int seconds = (args.length > 1) ? Integer.parseInt(args[1]) : 10;
        int rounds = (args.length > 2) ? Integer.parseInt(args[2]) : 2;
        List<Variant> variants = (args.length > 3) ? variants(args[3]) : List.of(Variant.values());
        print(run(Settings.of(threads, seconds, rounds, variants)), System.out);
    }

    /** Parses a comma-separated list of variant names, case-insensitive. */
    static List<Variant> variants(String list) {
        List<Variant> variants = new ArrayList<>();
        for (String name : list.split(",")) {
            String trimmed = name.trim().toUpperCase(Locale.ROOT);
            try {
                variants.add(Variant.valueOf(trimmed));
            }
            catch (IllegalArgumentException ex) {
                throw new IllegalArgumentException("Unknown hot key variant '" + name + "'; known: "
                        + Arrays.toString(Variant.values()), ex);
            }
        }
        return variants;
    }

    /** Starts Redis and the application, measures, and stops both, also when something fails. */
    static Run run(Settings settings) throws Exception {
        List<RedissonVariant> configs = configs();
        List<BenchEnvironment> envs = new ArrayList<>();
        try {
            for (RedissonVariant config : configs) {
                envs.add(BenchEnvironment.start(config));
            }
            return measure(envs, (configs.size() > 1) ? configs : List.of(), settings);
        }
        finally {
            RuntimeException failure = null;
            for (BenchEnvironment env : envs) {
                try {
                    env.close();
                }
                catch (RuntimeException ex) {
                    failure = ex;
                }
            }
            if (failure != null) {
                throw failure;
            }
        }
    }

    /**
     * The Redisson configurations to compare, {@code -Dbench.hotkey.redisson=DEFAULT,PROPOSED} ({@link RedissonVariant}
     * names): one application (and redis-server) each, all in this run, their slots taking turns; DEFAULT alone when
     * unset.
     */
    static List<RedissonVariant> configs() {
        String list = System.getProperty("bench.hotkey.redisson", RedissonVariant.DEFAULT.name());
        List<RedissonVariant> configs = new ArrayList<>();
        for (String name : list.split(",")) {
            try {
                configs.add(RedissonVariant.valueOf(name.trim().toUpperCase(Locale.ROOT)));
            }
            catch (IllegalArgumentException ex) {
                throw new IllegalArgumentException("Unknown bench.hotkey.redisson '" + name + "'; known: "
                        + Arrays.toString(RedissonVariant.values()), ex);
            }
        }
        return configs.stream().distinct().toList();
    }

    /** Measures on a running environment: the contended slots (warm-up, then rounds), then the uncontended ones. */
    static Run measure(BenchEnvironment env, Settings settings) throws InterruptedException {
        return measure(List.of(env), List.of(), settings);
    }

    /**
     * Measures on running environments, one per Redisson configuration ({@code configs} names them, empty for a single
     * unnamed one): every (configuration, variant) pair is a row, and the rows take turns in rotating order.
     */
    static Run measure(List<BenchEnvironment> envs, List<RedissonVariant> configs, Settings settings)
            throws InterruptedException {
        String loadBefore = Counters.loadAverage();
        List<Row> rows = new ArrayList<>();
        for (int e = 0; e < envs.size(); e++) {
            Counters.RedisProcess redis = Counters.RedisProcess.of(envs.get(e).server());
            String config = configs.isEmpty() ? "" : configs.get(e).name();
            for (Variant variant : settings.variants()) {
                rows.add(new Row(envs.get(e), redis, config, variant));
            }
        }
        List<Result> results = new ArrayList<>();
        results.addAll(measure(rows, settings.threads(), settings.rounds(), settings.slotMillis(),
                settings.warmupMillis()));
        results.addAll(measure(rows, 1, settings.rounds(), settings.uncontendedSlotMillis(),
                Math.min(1_000, settings.warmupMillis())));
        return new Run(settings, results, loadBefore, Counters.loadAverage());
    }

    /** One row of the table: a lock variant on one application (Redisson configuration). */
    private record Row(BenchEnvironment env, Counters.RedisProcess redis, String config, Variant variant) {
    }

    private static List<Result> measure(List<Row> rows, int threads, int rounds, long slotMillis, long warmupMillis)
            throws InterruptedException {
        HotKeyTotals[] totals = new HotKeyTotals[rows.size()];
        for (int i = 0; i < rows.size(); i++) {
            totals[i] = new HotKeyTotals(rounds, threads);
            if (warmupMillis > 0) {
                slot(rows.get(i).env(), rows.get(i).variant(), threads, warmupMillis, rows.get(i).config() + " warm-up");
            }
        }
        for (int r = 0; r < rounds; r++) {
            progress(threads + " threads, round " + (r + 1) + " of " + rounds + ", load average "
                    + Counters.loadAverage());
            for (int k = 0; k < rows.size(); k++) {
                // rotate the order so that no row always runs first or last
                int i = (r + k) % rows.size();
                Row row = rows.get(i);
                Counters before = row.redis().take();
                Slot slot = slot(row.env(), row.variant(), threads, slotMillis, row.config());
                Counters after = row.redis().take();
                totals[i].add(r, slot, before, after);
            }
        }
        List<Result> results = new ArrayList<>();
        for (int i = 0; i < rows.size(); i++) {
            Row row = rows.get(i);
            // the ratios are to RLock on the same application; without RLock in the run, to nothing (NaN)
            HotKeyTotals reference = new HotKeyTotals(rounds, threads);
            for (int j = 0; j < rows.size(); j++) {
                if (rows.get(j).variant() == Variant.RLOCK && rows.get(j).env() == row.env()) {
                    reference = totals[j];
                }
            }
            Variant variant = row.variant();
            HotKeyTotals t = totals[i];
            long cycles = t.cycles();
            Samples acquire = t.samples.sorted();
            Samples handoffs = t.handoffs.sorted();
            results.add(new Result(variant, threads, cycles, t.rate(), t.ratesPerRoundTo(reference),
                    t.rate() / reference.rate(), acquire.percentile(50), acquire.percentile(99),
                    acquire.percentile(99.9), t.minPerThread(), t.maxPerThread(), t.selfRegrabs, handoffs.size(),
                    handoffs.percentile(50), handoffs.percentile(99), t.ops / (double) cycles,
                    t.opsPerCycleMostFirst(), t.serverCpuNanos / 1e3 / cycles, t.clientCpuNanos / 1e3 / cycles,
                    t.overlaps, t.lostUpdates, t.failures, row.config(), t.roundP99, t.roundJit, t.roundOthers));
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
        return id -> LockCycles.waitWatchdogRun(lock, body);
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
    private static Slot slot(BenchEnvironment env, Variant variant, int threads, long millis, String config)
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
        AtomicLong acquisitions = new AtomicLong();
        HotKeyTrace trace = HotKeyTrace.enabled() ? new HotKeyTrace(threads, env.server().pid()) : null;
        long jitBefore = Counters.jitCpuNanos();
        long machineBefore = Counters.machineBusyTicks();
        long jvmBefore = Counters.jvmCpuNanos();
        long[] redisBefore = Counters.procTimes(env.server().pid());
        Slots.Outcome outcome = Slots.run(variant.label, "hot-key-", threads, millis, t -> {
            Samples acquire = acquirePerThread[t] = new Samples();
            Samples myHandoffs = handoffsPerThread[t] = new Samples();
            int self = t;
            // when this thread asked for the lock; written and read by this thread only
            long[] askedAt = new long[1];
            // the acquisitions counted when this thread asked (trace only): a FIFO lets threads - 1 others go first
            long[] seqAtAsk = new long[1];
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
                long gap = -1;
                if (previous == self) {
                    selfRegrabs[self]++;
                }
                else if (previous >= 0) {
                    gap = acquiredAt - releaseStartedAt.get();
                    myHandoffs.add(gap);
                    if (trace != null && variant == Variant.FAIR) {
                        trace.segments(self, releaseStartedAt.get(), acquiredAt);
                    }
                }
                if (trace != null) {
                    long seq = acquisitions.incrementAndGet();
                    trace.add(self, acquiredAt, acquiredAt - askedAt[0], seq - seqAtAsk[0] - 1, gap);
                }
                holders.decrementAndGet();
                releaseStartedAt.set(System.nanoTime());
            };
            LockCycles.Cycle cycle = cycle(env, variant, body);
            return () -> {
                if (trace != null) {
                    seqAtAsk[0] = acquisitions.get();
                }
                askedAt[0] = System.nanoTime();
                return cycle.run("hot");
            };
        }, Slots::withMessage);
        // join() orders every worker's writes before these reads
        if (trace != null && threads > 1) {
            trace.print(variant.label + " " + config + ", " + threads + " threads, " + millis + " ms slot", System.err);
        }
        Slots.Cycles cycles = Slots.Cycles.of(acquirePerThread);
        long lostUpdates = cycles.all().size() - counter.value;
        return new Slot(cycles, Slots.merge(handoffsPerThread), Arrays.stream(selfRegrabs).sum(), overlaps.sum(),
                lostUpdates, outcome, Counters.jitCpuNanos() - jitBefore,
                othersCpuNanos(machineBefore, jvmBefore, redisBefore, env.server().pid()));
    }

    /**
     * The critical section's shared state, incremented by whoever holds the lock with a read and a separate write
     * (volatile so that neither is kept in a register, yet not atomic: two holders at once can lose an update).
     */
    private static final class Counter {
        volatile long value;
    }

    /** One slot's samples: acquisition times, hand-off times, acquisitions per thread. */
    /**
     * The CPU time the rest of the machine (not this JVM, not the variant's redis-server) used since the values given:
     * other processes competing for the same cores.
     */
    private static final long TICKS = Counters.clockTicksPerSecond();

    private static long othersCpuNanos(long machineBefore, long jvmBefore, long[] redisBefore, long redisPid) {
        long ticks = TICKS;
        long machine = (Counters.machineBusyTicks() - machineBefore) * 1_000_000_000L / ticks;
        long[] redisAfter = Counters.procTimes(redisPid);
        long redis = (redisAfter[0] + redisAfter[1] - redisBefore[0] - redisBefore[1]) * 1_000_000_000L / ticks;
        return Math.max(0, machine - redis - (Counters.jvmCpuNanos() - jvmBefore));
    }

    private record Slot(Slots.Cycles cycles, Samples handoffs, long selfRegrabs, long overlaps, long lostUpdates,
            Slots.Outcome outcome, long jitNanos, long othersCpuNanos) {
    }

    /** One variant's sums over the measured rounds, with the hand-offs and the checks. */
    private static final class HotKeyTotals extends Totals.WithHandoffs {

        long lostUpdates;

        HotKeyTotals(int rounds, int threads) {
            super(rounds, threads);
            roundP99 = new long[rounds];
            roundJit = new double[rounds];
            roundOthers = new double[rounds];
        }

        /** Each round's acquisition p99, ns: a tail that shrinks round by round is still warming up. */
        final long[] roundP99;
        /** Each round's JIT compiler CPU per cycle, µs. */
        final double[] roundJit;
        /** Each round's CPU used by other processes, in cores (CPU seconds per second). */
        final double[] roundOthers;

        void add(int round, Slot slot, Counters before, Counters after) {
            roundP99[round] = slot.cycles().all().sorted().percentile(99);
            roundJit[round] = slot.jitNanos() / 1e3 / Math.max(1, slot.cycles().all().size());
            roundOthers[round] = slot.othersCpuNanos() / (double) slot.outcome().elapsedNanos();
            add(round, slot.cycles(), slot.outcome(), before, after);
            addHandoffs(slot.handoffs(), slot.selfRegrabs(), slot.overlaps());
            lostUpdates += slot.lostUpdates();
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
            // without RLock in the run there is nothing to divide by
            String ratio = Double.isFinite(r.vsRLock())
                    ? String.format(Locale.ROOT, "%.2f (%s)", r.vsRLock(), Cells.ratios(r.vsRLockPerRound())) : "–";
            String top = Cells.top(r.commandsByName());
            out.printf(Locale.ROOT, "| %s | %d | %,.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f | %s "
                            + "| %.0f | %.0f |%n",
                    r.label(), r.threads(), r.cyclesPerSecond(), ratio,
                    Cells.ms(r.acquireP50()), Cells.ms(r.acquireP99()), Cells.ms(r.acquireP999()),
                    r.contended() ? r.minPerThread() + " / " + r.maxPerThread() : "–",
                    r.contended() ? String.format(Locale.ROOT, "%.2f", r.fairness()) : "–",
                    r.contended() ? String.format(Locale.ROOT, "%.0f %%", 100 * r.selfRegrabShare()) : "–",
                    r.contended() ? Cells.ms(r.handoffP50()) : "–", r.contended() ? Cells.ms(r.handoffP99()) : "–",
                    r.commandsPerCycle(), top, r.redisCpuUsPerCycle(), r.clientCpuUsPerCycle());
        }
        out.println();
        out.println("Acquire p99 per round, in the order the rounds ran (in brackets: CPU of the JVM's JIT compiler "
                + "threads during the slot, µs per cycle; CPU of other processes on the machine, in cores): "
                + run.results().stream()
                .filter(Result::contended)
                .map(r -> r.label() + " " + java.util.stream.IntStream.range(0, r.acquireP99PerRound().length)
                        .mapToObj(i -> String.format(Locale.ROOT, "%s (%.0f; %.2f)", Cells.ms(r.acquireP99PerRound()[i]),
                                r.jitCpuUsPerCyclePerRound()[i], r.othersCoresPerRound()[i]))
                        .collect(Collectors.joining(", ")))
                .collect(Collectors.joining("; ")));
        out.println();
        out.println(Cells.REDIS_COMMANDS_CAPTION);
        out.println();
        out.println("| lock | threads | commands per cycle |");
        out.println("|---|---:|---|");
        for (Result r : run.results()) {
            out.printf(Locale.ROOT, "| %s | %d | %s |%n", r.label(), r.threads(),
                    Cells.perCycle(r.commandsByName(), "%s %.2f", ", "));
        }
        out.println();
        out.println("Checks (must be 0): " + run.results().stream()
                .map(r -> String.format(Locale.ROOT, "%s at %d: %d overlaps, %d lost updates, %s", r.label(),
                        r.threads(), r.overlaps(), r.lostUpdates(),
                        r.failures().isEmpty() ? "0 failed calls" : "failed calls " + r.failures()))
                .collect(Collectors.joining("; ")));
    }

    private static void progress(String what) {
        System.err.printf(Locale.ROOT, "[%tT] hot key comparison: %s%n", System.currentTimeMillis(), what);
    }
}

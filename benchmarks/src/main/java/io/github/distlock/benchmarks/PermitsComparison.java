package io.github.distlock.benchmarks;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Collectors;

import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;

/**
 * What {@code permits = N} costs next to a plain lock, through {@link LockTemplate}, in one run on one
 * {@code redis-server} and one application: {@link Variant#REENTRANT} against {@link Variant#PERMITS} (at most
 * {@value #PERMITS} holders of a key, a sorted set {@code distlock_permits:{<key>}} scored by Redis's clock, waiters
 * polling 5 → 50 ms).
 *
 * <p>Two workloads: (a) each thread on a key of its own (no waiting ever), at 1 and at 8 threads — the price of the
 * scripts themselves; (b) ONE key, 16 threads, wait 30 s — what polling does to a contended key, with REENTRANT on a
 * key of its own as the reference (one holder at a time, woken over pub/sub). The body of every cycle increments a
 * counter and a gauge of the threads inside it on that key; the most seen at once must not exceed the variant's
 * permits (1 for REENTRANT). The gauge is read inside the body, which runs after the acquisition completed and before
 * the release starts, so it can only under-count the holders Redis sees, never over-count them: a value above the
 * permits is a broken semaphore.
 *
 * <p>Per row: cycles/s and the ratio to REENTRANT of the same workload per round (the two take turns in slots whose
 * order rotates per round, after one discarded warm-up slot each); acquisition latency (asking → body start) p50/p99;
 * acquisitions per thread min / max; Redis commands per cycle ({@code INFO commandstats} deltas, commands inside
 * scripts included) and redis-server / client JVM CPU µs per cycle.
 */
public final class PermitsComparison {

    /** Permits of the {@link Variant#PERMITS} variant. */
    static final int PERMITS = 3;

    /** The locks compared; {@link #REENTRANT} is the reference of the ratios. */
    enum Variant {
        REENTRANT("`REENTRANT`", 1),
        PERMITS("`permits = " + PermitsComparison.PERMITS + "`", PermitsComparison.PERMITS);

        final String label;
        final int permits;

        Variant(String label, int permits) {
            this.label = label;
            this.permits = permits;
        }

        LockOptions options() {
            LockOptions options = new LockOptions(Duration.ofMillis(LockCycles.WAIT_MS), LockOptions.WATCHDOG, false);
            return (permits > 1) ? options.withPermits(permits) : options;
        }

        /** The distlock key of thread {@code thread} (all threads share key 0 on the hot key). */
        String key(boolean oneKey, int thread) {
            return "bench:pc-" + name().toLowerCase(Locale.ROOT) + (oneKey ? "-hot" : "-" + thread);
        }
    }

    /** A workload: {@code threads} threads, each on a key of its own or all on one. */
    record Workload(int threads, boolean oneKey) {

        String label() {
            return oneKey ? "one key" : "own keys";
        }
    }

    /**
     * What one run does.
     *
     * @param rounds rounds of one slot per variant and workload
     * @param slotMillis length of one slot
     * @param warmupMillis the discarded warm-up slot per variant and workload
     * @param workloads the workloads, measured in this order within each round
     * @param holdMillis how long the body holds the key after the counter and the gauge: 0 (a tiny body) to measure;
     *        the smoke test holds a few ms so that holders overlap and the gauge can catch a broken semaphore
     */
    record Settings(int rounds, long slotMillis, long warmupMillis, List<Workload> workloads, long holdMillis) {

        Settings {
            if (rounds < 1 || slotMillis < 1 || warmupMillis < 0 || holdMillis < 0) {
                throw new IllegalArgumentException("rounds and slot length must be positive, warm-up not negative: "
                        + rounds + ", " + slotMillis + ", " + warmupMillis + "; hold not negative: " + holdMillis);
            }
            if (workloads.isEmpty()) {
                throw new IllegalArgumentException("workloads must not be empty");
            }
            workloads = List.copyOf(workloads);
        }

        /** 1 and 8 threads on own keys, 16 on one key; {@code seconds} per slot, a warm-up of one slot (≤ 2 s). */
        static Settings of(int seconds, int rounds) {
            long slot = seconds * 1000L;
            return new Settings(rounds, slot, Math.min(2_000, slot), List.of(new Workload(1, false),
                    new Workload(8, false), new Workload(16, true)), 0);
        }
    }

    /** One variant's totals on one workload over all measured rounds; times in ns, CPU in µs per cycle. */
    record Result(Variant variant, Workload workload, long cycles, double cyclesPerSecond, double[] vsReentrantPerRound,
            double vsReentrant, long acquireP50, long acquireP99, long minPerThread, long maxPerThread,
            int mostHolders, long bodyRuns, double commandsPerCycle, Map<String, Double> commandsByName,
            double redisCpuUsPerCycle, double clientCpuUsPerCycle, Map<String, Long> failures) {

        /** Whether the gauge stayed within the variant's permits. */
        boolean withinPermits() {
            return mostHolders <= variant.permits;
        }
    }

    /** A run's results, workload by workload, REENTRANT first, with the machine's load around it. */
    record Run(Settings settings, List<Result> results, String loadBefore, String loadAfter) {
    }

    private PermitsComparison() {
    }

    /**
     * Usage: {@code PermitsComparison [seconds per slot] [rounds]}; defaults 3 s in 3 rounds: about 1.5 minutes.
     * Exits with status 1 when a key had more holders at once than its permits.
     */
    public static void main(String[] args) throws Exception {
        int seconds = (args.length > 0) ? Integer.parseInt(args[0]) : 3;
        int rounds = (args.length > 1) ? Integer.parseInt(args[1]) : 3;
        Run run = run(Settings.of(seconds, rounds));
        print(run, System.out);
        if (run.results().stream().anyMatch(r -> !r.withinPermits())) {
            System.err.println("More holders at once than permits: see the table");
            System.exit(1);
        }
    }

    /** Starts Redis and the application, measures, and stops both, also when something fails. */
    static Run run(Settings settings) throws Exception {
        try (BenchEnvironment env = BenchEnvironment.start(RedissonVariant.DEFAULT)) {
            return measure(env, settings);
        }
    }

    /** Measures on a running environment: warm-up slots, then the rounds. */
    static Run measure(BenchEnvironment env, Settings settings) throws InterruptedException {
        String loadBefore = Counters.loadAverage();
        Counters.RedisProcess redis = Counters.RedisProcess.of(env.server());
        Variant[] variants = Variant.values();
        List<Workload> workloads = settings.workloads();
        PermitsTotals[][] totals = new PermitsTotals[workloads.size()][variants.length];
        for (int w = 0; w < workloads.size(); w++) {
            for (Variant variant : variants) {
                totals[w][variant.ordinal()] = new PermitsTotals(settings.rounds(), workloads.get(w).threads());
                if (settings.warmupMillis() > 0) {
                    slot(env.lockTemplate(), variant, workloads.get(w), settings.warmupMillis(), 0);
                }
            }
        }
        for (int r = 0; r < settings.rounds(); r++) {
            progress("round " + (r + 1) + " of " + settings.rounds() + ", load average "
                    + Counters.loadAverage());
            for (int w = 0; w < workloads.size(); w++) {
                for (int k = 0; k < variants.length; k++) {
                    // rotate the order so that neither variant always runs first
                    Variant variant = variants[(r + k) % variants.length];
                    Counters before = redis.take();
                    Slot slot = slot(env.lockTemplate(), variant, workloads.get(w), settings.slotMillis(),
                            settings.holdMillis());
                    Counters after = redis.take();
                    totals[w][variant.ordinal()].add(r, slot, before, after);
                }
            }
        }
        List<Result> results = new ArrayList<>();
        for (int w = 0; w < workloads.size(); w++) {
            PermitsTotals reference = totals[w][Variant.REENTRANT.ordinal()];
            for (Variant variant : variants) {
                PermitsTotals t = totals[w][variant.ordinal()];
                long cycles = t.cycles();
                Samples acquire = t.samples.sorted();
                results.add(new Result(variant, workloads.get(w), cycles, t.rate(), t.ratesPerRoundTo(reference),
                        t.rate() / reference.rate(), acquire.percentile(50), acquire.percentile(99),
                        t.minPerThread(), t.maxPerThread(), t.mostHolders, t.bodyRuns, t.ops / (double) cycles,
                        t.opsPerCycleMostFirst(), t.serverCpuNanos / 1e3 / cycles, t.clientCpuNanos / 1e3 / cycles,
                        t.failures));
            }
        }
        return new Run(settings, results, loadBefore, Counters.loadAverage());
    }

    /** The workload's threads run {@code variant}'s cycle for {@code millis} ms (and finish the call they are in). */
    private static Slot slot(LockTemplate template, Variant variant, Workload workload, long millis, long holdMillis)
            throws InterruptedException {
        int threads = workload.threads();
        LockOptions options = variant.options();
        Samples[] acquirePerThread = new Samples[threads];
        // one gauge per key: threads inside the body on that key right now
        AtomicInteger[] gauges = new AtomicInteger[workload.oneKey() ? 1 : threads];
        Arrays.setAll(gauges, i -> new AtomicInteger());
        AtomicInteger mostHolders = new AtomicInteger();
        LongAdder bodyRuns = new LongAdder();
        Slots.Outcome outcome = Slots.run(variant.label + " on " + workload, "permits-", threads, millis, t -> {
            Samples acquire = acquirePerThread[t] = new Samples();
            AtomicInteger gauge = gauges[workload.oneKey() ? 0 : t];
            String key = variant.key(workload.oneKey(), t);
            return () -> {
                long askedAt = System.nanoTime();
                template.execute(key, options, () -> {
                    acquire.add(System.nanoTime() - askedAt);
                    int inside = gauge.incrementAndGet();
                    mostHolders.accumulateAndGet(inside, Math::max);
                    bodyRuns.increment();
                    if (holdMillis > 0) {
                        Thread.sleep(holdMillis);
                    }
                    gauge.decrementAndGet();
                    return null;
                });
                return true;
            };
        }, Slots::withMessage);
        return new Slot(Slots.Cycles.of(acquirePerThread), mostHolders.get(), bodyRuns.sum(), outcome);
    }

    /** One slot's samples. */
    private record Slot(Slots.Cycles cycles, int mostHolders, long bodyRuns, Slots.Outcome outcome) {
    }

    /** One variant's sums on one workload over the measured rounds, with the holders gauge. */
    private static final class PermitsTotals extends Totals {

        int mostHolders;
        long bodyRuns;

        PermitsTotals(int rounds, int threads) {
            super(rounds, threads);
        }

        void add(int round, Slot slot, Counters before, Counters after) {
            add(round, slot.cycles(), slot.outcome(), before, after);
            mostHolders = Math.max(mostHolders, slot.mostHolders());
            bodyRuns += slot.bodyRuns();
        }
    }

    /** The table, the commands by name, and the checks. */
    static void print(Run run, PrintStream out) {
        Settings s = run.settings();
        out.println();
        out.printf(Locale.ROOT, "LockTemplate, wait 30 s, watchdog lease; %d round(s) of %.1f s per row, warm-up %.1f s; "
                        + "body: a counter and a holders gauge%s; load average before: %s, after: %s%n", s.rounds(),
                s.slotMillis() / 1e3, s.warmupMillis() / 1e3,
                (s.holdMillis() > 0) ? " and a " + s.holdMillis() + " ms hold" : "", run.loadBefore(), run.loadAfter());
        out.println();
        out.println("| lock | keys | threads | cycles/s | vs REENTRANT (per round) | acquire p50 | p99 "
                + "| per thread min / max | most holders at once | Redis cmds/cycle | top commands/cycle "
                + "| Redis CPU µs/cycle | client CPU µs/cycle |");
        out.println("|---|---|---:|---:|---|---:|---:|---|---:|---:|---|---:|---:|");
        for (Result r : run.results()) {
            String perRound = Cells.ratios(r.vsReentrantPerRound());
            String top = Cells.top(r.commandsByName());
            out.printf(Locale.ROOT, "| %s | %s | %d | %,.0f | %.2f (%s) | %s | %s | %s | %d of %d | %.1f | %s | %.0f "
                            + "| %.0f |%n",
                    r.variant().label, r.workload().label(), r.workload().threads(), r.cyclesPerSecond(),
                    r.vsReentrant(), perRound, Cells.ms(r.acquireP50()), Cells.ms(r.acquireP99()),
                    r.workload().threads() > 1 ? r.minPerThread() + " / " + r.maxPerThread() : "–",
                    r.mostHolders(), r.variant().permits, r.commandsPerCycle(), top, r.redisCpuUsPerCycle(),
                    r.clientCpuUsPerCycle());
        }
        out.println();
        out.println(Cells.REDIS_COMMANDS_CAPTION);
        out.println();
        out.println("| lock | keys | threads | commands per cycle |");
        out.println("|---|---|---:|---|");
        for (Result r : run.results()) {
            out.printf(Locale.ROOT, "| %s | %s | %d | %s |%n", r.variant().label, r.workload().label(),
                    r.workload().threads(), Cells.perCycle(r.commandsByName(), "%s %.2f", ", "));
        }
        out.println();
        out.println("Checks: " + run.results().stream()
                .map(r -> String.format(Locale.ROOT, "%s, %s, %d threads: most holders %d %s %d, %d body runs for %d "
                                + "acquisitions, %s", r.variant().label, r.workload().label(), r.workload().threads(),
                        r.mostHolders(), r.withinPermits() ? "≤" : "> (BROKEN)", r.variant().permits, r.bodyRuns(),
                        r.cycles(), r.failures().isEmpty() ? "0 failed calls" : "failed calls " + r.failures()))
                .collect(Collectors.joining("; ")));
    }

    private static void progress(String what) {
        System.err.printf(Locale.ROOT, "[%tT] permits comparison: %s%n", System.currentTimeMillis(), what);
    }
}

package io.github.distlock.benchmarks;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicReference;

import io.github.distlock.LockType;
import io.github.distlock.benchmarks.LockCycles.Impl;
import io.github.distlock.benchmarks.LockCycles.Lease;

/**
 * {@link PairedComparison} for more than two cycles: on one Redis and one application, every thread runs each of the
 * cases in turn, starting each pass with the next case (so no case always follows the same one), on a key of its own
 * per case, and times each. All cases see the same load at the same moments; the ratio of each case's mean to the first
 * case's is computed per round, and the spread of those per-round ratios is the error bar.
 *
 * <p>Two comparisons use it: the lock types (and a two-key call) against {@code REENTRANT}, and the cost of a nested
 * call on a held key, in distlock's template and in Redisson's own re-entry.
 */
public final class InterleavedComparison {

    /** One measured cycle. */
    record Case(String label, Impl impl, LockType type) {
    }

    /** One case's result: mean and percentiles over all rounds, and its ratio to the first case. */
    record Result(Case c, int threads, long cycles, double meanUs, double p50Us, double p99Us, double[] roundMeansUs,
            double ratio, double ratioMin, double ratioMax, double ratioStdev) {
    }

    private InterleavedComparison() {
    }

    /**
     * Usage: {@code InterleavedComparison types|nested [rounds] [seconds per round] [threads,...]}; defaults 5 rounds
     * of 3 s at 1 and 8 threads.
     */
    public static void main(String[] args) throws Exception {
        String which = (args.length > 0) ? args[0] : "types";
        int rounds = (args.length > 1) ? Integer.parseInt(args[1]) : 5;
        int seconds = (args.length > 2) ? Integer.parseInt(args[2]) : 3;
        int[] threads = (args.length > 3) ? HandoffLatency.parseInts(args[3]) : new int[] {1, 8};
        List<Case> cases = switch (which) {
            case "types" -> typeCases();
            case "nested" -> nestedCases();
            default -> throw new IllegalArgumentException("types or nested, not " + which);
        };
        List<List<Result>> results = new ArrayList<>();
        for (int t : threads) {
            results.add(run(cases, t, rounds, seconds));
        }
        if (which.equals("nested")) {
            printNested(results, System.out);
        }
        else {
            print(results, System.out);
        }
    }

    /** The template taking each lock type, and two keys per call, against REENTRANT (the first case). */
    static List<Case> typeCases() {
        return List.of(
                new Case("LockTemplate, REENTRANT", Impl.TEMPLATE, LockType.REENTRANT),
                new Case("LockTemplate, FAIR", Impl.TEMPLATE, LockType.FAIR),
                new Case("LockTemplate, READ", Impl.TEMPLATE, LockType.READ),
                new Case("LockTemplate, WRITE", Impl.TEMPLATE, LockType.WRITE),
                new Case("LockTemplate, 2 keys per call (REENTRANT)", Impl.MULTI, LockType.REENTRANT));
    }

    /** One call and a call with a nested call on the same key, in Redisson and in distlock's template. */
    static List<Case> nestedCases() {
        return List.of(
                new Case("Redisson tryLock + unlock", Impl.REDISSON, LockType.REENTRANT),
                new Case("Redisson, re-entered once (tryLock twice, unlock twice)", Impl.REDISSON_NESTED,
                        LockType.REENTRANT),
                new Case("LockTemplate.execute", Impl.TEMPLATE, LockType.REENTRANT),
                new Case("LockTemplate.execute with a nested execute on the same key", Impl.TEMPLATE_NESTED,
                        LockType.REENTRANT));
    }

    /** Runs {@code cases} interleaved at {@code threads} threads, watchdog lease, one try, one key per thread. */
    static List<Result> run(List<Case> cases, int threads, int rounds, int seconds) throws Exception {
        try (BenchEnvironment env = BenchEnvironment.start(RedissonVariant.DEFAULT)) {
            LockCycles.Cycle[] cycles = new LockCycles.Cycle[cases.size()];
            for (int i = 0; i < cycles.length; i++) {
                Case c = cases.get(i);
                cycles[i] = LockCycles.cycle(env, c.impl(), Lease.WATCHDOG, false, c.type());
            }
            // warm-up round, discarded
            round(cycles, threads, Math.max(1, seconds / 2));
            Samples[] all = new Samples[cycles.length];
            double[][] roundMeans = new double[cycles.length][rounds];
            for (int i = 0; i < all.length; i++) {
                all[i] = new Samples();
            }
            for (int r = 0; r < rounds; r++) {
                Samples[] sides = round(cycles, threads, seconds);
                for (int i = 0; i < sides.length; i++) {
                    roundMeans[i][r] = sides[i].sum() / 1e3 / sides[i].size();
                    all[i].addAll(sides[i]);
                }
            }
            List<Result> results = new ArrayList<>();
            double baseMean = all[0].sum() / (double) all[0].size();
            for (int i = 0; i < cycles.length; i++) {
                double[] ratios = new double[rounds];
                for (int r = 0; r < rounds; r++) {
                    ratios[r] = roundMeans[i][r] / roundMeans[0][r];
                }
                double mean = all[i].sum() / (double) all[i].size();
                Samples sorted = all[i].sorted();
                results.add(new Result(cases.get(i), threads, all[i].size(), mean / 1e3, sorted.percentile(50) / 1e3,
                        sorted.percentile(99) / 1e3, roundMeans[i], mean / baseMean, min(ratios), max(ratios),
                        stdev(ratios)));
            }
            return results;
        }
    }

    /** One round: every thread runs all cycles in turn; returns the cycle times in ns per case. */
    private static Samples[] round(LockCycles.Cycle[] cycles, int threads, int seconds) throws InterruptedException {
        int n = cycles.length;
        Samples[][] perThread = new Samples[threads][];
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Samples[] mine = perThread[t] = new Samples[n];
            String[] ids = new String[n];
            for (int i = 0; i < n; i++) {
                mine[i] = new Samples();
                // a key per thread and case: types of one key share (and exclude on) one Redis structure
                ids[i] = "t" + t + ":c" + i;
            }
            int firstStart = t % n;
            Thread worker = new Thread(() -> {
                try {
                    int start = firstStart;
                    while (System.nanoTime() < deadline) {
                        for (int k = 0; k < n; k++) {
                            int i = (start + k) % n;
                            mine[i].add(time(cycles[i], ids[i]));
                        }
                        start = (start + 1) % n;
                    }
                }
                catch (Throwable ex) {
                    failure.compareAndSet(null, ex);
                }
            }, "interleaved-" + t);
            workers.add(worker);
            worker.start();
        }
        for (Thread worker : workers) {
            worker.join();
        }
        if (failure.get() != null) {
            throw new IllegalStateException("interleaved run failed", failure.get());
        }
        Samples[] merged = new Samples[n];
        for (int i = 0; i < n; i++) {
            merged[i] = new Samples();
            for (Samples[] mine : perThread) {
                merged[i].addAll(mine[i]);
            }
        }
        return merged;
    }

    private static long time(LockCycles.Cycle cycle, String id) throws InterruptedException {
        long start = System.nanoTime();
        if (!cycle.run(id)) {
            throw new IllegalStateException("lock '" + id + "' not acquired");
        }
        return System.nanoTime() - start;
    }

    /** One table: each case's cycle time and its ratio to the first case of its thread count. */
    static void print(List<List<Result>> runs, PrintStream out) {
        out.println();
        out.println("| case | threads | cycles | mean µs | p50 µs | p99 µs | vs first (mean) | per-round min–max (stdev) |");
        out.println("|---|---:|---:|---:|---:|---:|---:|---|");
        for (List<Result> run : runs) {
            for (Result r : run) {
                out.printf(Locale.ROOT, "| %s | %d | %d | %.0f | %.0f | %.0f | %.3f | %.3f–%.3f (%.3f) |%n",
                        r.c().label(), r.threads(), r.cycles(), r.meanUs(), r.p50Us(), r.p99Us(), r.ratio(),
                        r.ratioMin(), r.ratioMax(), r.ratioStdev());
            }
        }
    }

    /** {@link #print}, then what the nested call adds on each side (nested cycle minus single cycle, per round). */
    static void printNested(List<List<Result>> runs, PrintStream out) {
        print(runs, out);
        out.println();
        out.println("| threads | what a nested call adds | mean µs | per-round min–max µs | in single cycles |");
        out.println("|---:|---|---:|---|---:|");
        for (List<Result> run : runs) {
            addedRow(run.get(0), run.get(1), "Redisson's re-entry (lock script + unlock script)", out);
            addedRow(run.get(2), run.get(3), "distlock's re-entry (one HEXISTS, no release)", out);
        }
    }

    private static void addedRow(Result single, Result nested, String label, PrintStream out) {
        int rounds = single.roundMeansUs().length;
        double[] added = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            added[r] = nested.roundMeansUs()[r] - single.roundMeansUs()[r];
        }
        double mean = nested.meanUs() - single.meanUs();
        out.printf(Locale.ROOT, "| %d | %s | %.0f | %.0f–%.0f | %.2f |%n", single.threads(), label, mean, min(added),
                max(added), mean / single.meanUs());
    }

    private static double min(double[] values) {
        double min = Double.MAX_VALUE;
        for (double v : values) {
            min = Math.min(min, v);
        }
        return min;
    }

    private static double max(double[] values) {
        double max = -Double.MAX_VALUE;
        for (double v : values) {
            max = Math.max(max, v);
        }
        return max;
    }

    private static double stdev(double[] values) {
        double sum = 0;
        for (double v : values) {
            sum += v;
        }
        double mean = sum / values.length;
        double squares = 0;
        for (double v : values) {
            squares += (v - mean) * (v - mean);
        }
        return Math.sqrt(squares / Math.max(1, values.length - 1));
    }
}

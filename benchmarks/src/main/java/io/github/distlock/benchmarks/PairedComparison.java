package io.github.distlock.benchmarks;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicReference;

import io.github.distlock.benchmarks.LockCycles.Impl;
import io.github.distlock.benchmarks.LockCycles.Lease;

/**
 * The overhead ratio, measured so that machine noise cancels: on one Redis and one application, every thread alternates
 * a raw-Redisson cycle and a distlock cycle (in alternating order) on its own key and times each. Both sides see the same
 * load at the same moments, which separate JMH trials on a shared 2-core machine cannot promise. The run is split into
 * rounds; the spread of the per-round ratios is the honest error bar.
 */
public final class PairedComparison {

    /** One comparison: {@code candidate} against raw Redisson with the same lease. */
    record Pair(Impl candidate, Lease lease, int threads) {
    }

    /** Mean cycle times in microseconds, and the ratio candidate / Redisson per round. */
    record Result(Pair pair, long cyclesPerSide, double redissonUs, double candidateUs, double redissonP50,
            double candidateP50, double ratio, double ratioMin, double ratioMax, double ratioStdev) {
    }

    private PairedComparison() {
    }

    /**
     * Usage: {@code PairedComparison [rounds] [seconds per round] [threads,...]}; each cycle tries once (wait 0), or,
     * with {@code -Dpaired.wait=true}, waits up to 30 s (never needed: a key per thread).
     */
    public static void main(String[] args) throws Exception {
        int rounds = (args.length > 0) ? Integer.parseInt(args[0]) : 5;
        int seconds = (args.length > 1) ? Integer.parseInt(args[1]) : 4;
        int[] threads = (args.length > 2) ? HandoffLatency.parseInts(args[2]) : new int[] {1, 8};
        print(run(pairs(threads), rounds, seconds), System.out);
    }

    static List<Pair> pairs(int[] threadCounts) {
        List<Pair> pairs = new ArrayList<>();
        for (int threads : threadCounts) {
            for (Lease lease : Lease.values()) {
                pairs.add(new Pair(Impl.ANNOTATION, lease, threads));
                pairs.add(new Pair(Impl.TEMPLATE, lease, threads));
            }
        }
        return pairs;
    }

    static List<Result> run(List<Pair> pairs, int rounds, int seconds) throws Exception {
        List<Result> results = new ArrayList<>();
        for (Pair pair : pairs) {
            try (BenchEnvironment env = BenchEnvironment.start(RedissonVariant.DEFAULT)) {
                results.add(measure(env, pair, rounds, seconds));
            }
        }
        return results;
    }

    private static Result measure(BenchEnvironment env, Pair pair, int rounds, int seconds) throws Exception {
        // -Dpaired.wait=true: both sides wait up to 30 s (distlock's waiting path: a line only on contention)
        boolean wait = Boolean.getBoolean("paired.wait");
        LockCycles.Cycle redisson = LockCycles.cycle(env, Impl.REDISSON, pair.lease(), wait);
        LockCycles.Cycle candidate = LockCycles.cycle(env, pair.candidate(), pair.lease(), wait);
        // warm-up round, discarded
        round(redisson, candidate, pair.threads(), Math.max(1, seconds / 2));
        double[] ratios = new double[rounds];
        Samples allRedisson = new Samples();
        Samples allCandidate = new Samples();
        for (int r = 0; r < rounds; r++) {
            Samples[] sides = round(redisson, candidate, pair.threads(), seconds);
            ratios[r] = (sides[1].sum() / (double) sides[1].size()) / (sides[0].sum() / (double) sides[0].size());
            allRedisson.addAll(sides[0]);
            allCandidate.addAll(sides[1]);
        }
        double meanRatio = (allCandidate.sum() / (double) allCandidate.size())
                / (allRedisson.sum() / (double) allRedisson.size());
        double min = Double.MAX_VALUE;
        double max = 0;
        double sum = 0;
        for (double ratio : ratios) {
            min = Math.min(min, ratio);
            max = Math.max(max, ratio);
            sum += ratio;
        }
        double mean = sum / rounds;
        double squares = 0;
        for (double ratio : ratios) {
            squares += (ratio - mean) * (ratio - mean);
        }
        double stdev = Math.sqrt(squares / Math.max(1, rounds - 1));
        return new Result(pair, allRedisson.size(), allRedisson.sum() / 1e3 / allRedisson.size(),
                allCandidate.sum() / 1e3 / allCandidate.size(), allRedisson.sorted().percentile(50) / 1e3,
                allCandidate.sorted().percentile(50) / 1e3, meanRatio, min, max, stdev);
    }

    /** One round: every thread alternates the two cycles; returns {redisson, candidate} cycle times in ns. */
    private static Samples[] round(LockCycles.Cycle redisson, LockCycles.Cycle candidate, int threads, int seconds)
            throws InterruptedException {
        Samples[][] perThread = new Samples[threads][2];
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Samples[] mine = perThread[t] = new Samples[] {new Samples(), new Samples()};
            String id = "t" + t;
            Thread worker = new Thread(() -> {
                try {
                    boolean redissonFirst = true;
                    while (System.nanoTime() < deadline) {
                        // alternate the order so that neither side always runs right after the other
                        if (redissonFirst) {
                            mine[0].add(time(redisson, id));
                            mine[1].add(time(candidate, id));
                        }
                        else {
                            mine[1].add(time(candidate, id));
                            mine[0].add(time(redisson, id));
                        }
                        redissonFirst = !redissonFirst;
                    }
                }
                catch (Throwable ex) {
                    failure.compareAndSet(null, ex);
                }
            }, "paired-" + t);
            workers.add(worker);
            worker.start();
        }
        for (Thread worker : workers) {
            worker.join();
        }
        if (failure.get() != null) {
            throw new IllegalStateException("paired run failed", failure.get());
        }
        Samples redissonTimes = new Samples();
        Samples candidateTimes = new Samples();
        for (Samples[] mine : perThread) {
            redissonTimes.addAll(mine[0]);
            candidateTimes.addAll(mine[1]);
        }
        return new Samples[] {redissonTimes, candidateTimes};
    }

    private static long time(LockCycles.Cycle cycle, String id) throws InterruptedException {
        long start = System.nanoTime();
        if (!cycle.run(id)) {
            throw new IllegalStateException("lock '" + id + "' not acquired");
        }
        return System.nanoTime() - start;
    }

    static void print(List<Result> results, PrintStream out) {
        out.println();
        out.println("| candidate vs raw Redisson | lease | threads | cycles/side | Redisson mean µs | candidate mean µs "
                + "| Redisson p50 µs | candidate p50 µs | ratio (mean) | per-round ratios min–max (stdev) |");
        out.println("|---|---|---:|---:|---:|---:|---:|---:|---:|---|");
        for (Result r : results) {
            out.printf(Locale.ROOT, "| %s | %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %.3f | %.3f–%.3f (%.3f) |%n",
                    r.pair().candidate() == Impl.ANNOTATION ? "@DistributedLock" : "LockTemplate",
                    r.pair().lease().name().toLowerCase(Locale.ROOT), r.pair().threads(), r.cyclesPerSide(),
                    r.redissonUs(), r.candidateUs(), r.redissonP50(), r.candidateP50(), r.ratio(), r.ratioMin(),
                    r.ratioMax(), r.ratioStdev());
        }
    }
}

package io.github.distlock.benchmarks;

import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * One case's sums over the measured rounds of a harness whose cases take turns in slots ({@link Slots}): the successful
 * cycles' samples, cycles per thread, each round's rate (for the ratios to the reference case, round by round: two
 * neighbouring slots share the machine's load), the server's operations and CPU and the client's CPU, the failed calls.
 * A harness extends it with what else it counts.
 */
class Totals {

    final Samples samples = new Samples();
    final double[] roundRates;
    final long[] perThread;
    long elapsedNanos;
    long ops;
    final Map<String, Long> opsByName = new HashMap<>();
    long serverCpuNanos;
    long clientCpuNanos;
    final Map<String, Long> failures = new LinkedHashMap<>();

    Totals(int rounds, int threads) {
        roundRates = new double[rounds];
        perThread = new long[threads];
    }

    /**
     * Adds the measured slot of round {@code round}: its successful cycles, its length and failures, and the counters
     * taken around it.
     */
    void add(int round, Slots.Cycles cycles, Slots.Outcome outcome, Counters before, Counters after) {
        samples.addAll(cycles.all());
        for (int t = 0; t < perThread.length; t++) {
            perThread[t] += cycles.perThread()[t];
        }
        elapsedNanos += outcome.elapsedNanos();
        roundRates[round] = cycles.all().size() * 1e9 / outcome.elapsedNanos();
        ops += after.total() - before.total();
        after.ops().forEach((name, calls) -> opsByName.merge(name, calls - before.ops().getOrDefault(name, 0L),
                Long::sum));
        serverCpuNanos += after.serverCpuNanos() - before.serverCpuNanos();
        clientCpuNanos += after.clientCpuNanos() - before.clientCpuNanos();
        outcome.failures().forEach((what, count) -> failures.merge(what, count, Long::sum));
    }

    /** Successful cycles. */
    long cycles() {
        return samples.size();
    }

    /** Successful cycles per second over all rounds. */
    double rate() {
        return samples.size() * 1e9 / elapsedNanos;
    }

    /** This case's rate over the reference's, round by round. */
    double[] ratesPerRoundTo(Totals reference) {
        double[] ratios = new double[roundRates.length];
        for (int r = 0; r < ratios.length; r++) {
            ratios[r] = roundRates[r] / reference.roundRates[r];
        }
        return ratios;
    }

    long minPerThread() {
        return Arrays.stream(perThread).min().orElse(0);
    }

    long maxPerThread() {
        return Arrays.stream(perThread).max().orElse(0);
    }

    /** The operations that ran, per cycle, most frequent first. */
    Map<String, Double> opsPerCycleMostFirst() {
        long cycles = cycles();
        Map<String, Double> byName = new LinkedHashMap<>();
        opsByName.entrySet().stream().filter(e -> e.getValue() > 0)
                .sorted(Map.Entry.<String, Long>comparingByValue(Comparator.reverseOrder()))
                .forEach(e -> byName.put(e.getKey(), e.getValue() / (double) cycles));
        return byName;
    }

    /** The operations that ran, per cycle, by name. */
    Map<String, Double> opsPerCycleByName() {
        long cycles = cycles();
        Map<String, Double> byName = new TreeMap<>();
        opsByName.forEach((name, calls) -> {
            if (calls > 0) {
                byName.put(name, calls / (double) cycles);
            }
        });
        return byName;
    }

    /**
     * The sums of a harness that also times the hand-offs on a hot key (from the previous holder's body end to the next,
     * other, holder's body start), counts the self re-grabs, and checks exclusion (overlaps, which must be 0).
     */
    static class WithHandoffs extends Totals {

        final Samples handoffs = new Samples();
        long selfRegrabs;
        long overlaps;

        WithHandoffs(int rounds, int threads) {
            super(rounds, threads);
        }

        void addHandoffs(Samples slotHandoffs, long slotSelfRegrabs, long slotOverlaps) {
            handoffs.addAll(slotHandoffs);
            selfRegrabs += slotSelfRegrabs;
            overlaps += slotOverlaps;
        }
    }
}

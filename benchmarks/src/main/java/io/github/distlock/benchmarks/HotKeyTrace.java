package io.github.distlock.benchmarks;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;

/**
 * Where {@link HotKeyComparison}'s acquisition tail comes from (on with {@code -Dbench.hotkey.trace=true}): every
 * acquisition of a contended slot with when it happened, its latency, how many acquisitions of other threads happened
 * while it waited (a FIFO lets exactly threads - 1 go first) and the hand-off gap before it (previous holder's body end
 * to this body's start; -1 after a self re-grab). Printed per slot: the gaps' distribution and the long ones with
 * their wall-clock times (to set next to a JFR recording), and for the slowest acquisitions whether one long gap or a
 * queue overtaking explains them.
 */
final class HotKeyTrace {

    /** Long hand-offs listed one by one from this length. */
    private static final long LONG_GAP_NANOS = 5_000_000;

    private final Samples[] at;
    private final Samples[] latency;
    private final Samples[] others;
    private final Samples[] gaps;
    /**
     * Per hand-off of the FAIR lock: previous body end to release sent, to grant message read by the listener, to this
     * body's start. Only when {@code HandoffLocks} carries the two static {@code long} fields {@code traceReleaseSent}
     * and {@code traceMessageRead} (a temporary patch for an investigation, never committed: see
     * benchmarks/results/2026-11-22-hotkey-p99-*.md); otherwise not printed.
     */
    private final Samples[] segA;
    private final Samples[] segB;
    private final Samples[] segC;
    private final java.util.Map<String, long[]> schedBefore;
    private final long redisPid;
    private final long startNanos = System.nanoTime();
    private final long startWallMillis = System.currentTimeMillis();

    /**
     * A thread that sleeps 1 ms at a time and notes each wake-up more than 1 ms late (start, lateness): the moments when
     * a thread woken on this machine waited for a CPU, whatever the lock does.
     */
    private final Samples probeLateAt = new Samples();
    private final Samples probeLate = new Samples();
    private volatile boolean probing = true;
    private final Thread probe;

    HotKeyTrace(int threads, long redisPid) {
        this.redisPid = redisPid;
        probe = new Thread(() -> {
            while (probing) {
                long before = System.nanoTime();
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
                long late = System.nanoTime() - before - 1_000_000;
                if (late > 1_000_000) {
                    probeLateAt.add(before);
                    probeLate.add(late);
                }
            }
        }, "hot-key-probe");
        probe.setDaemon(true);
        probe.start();
        this.schedBefore = sched(redisPid);
        segA = new Samples[threads];
        segB = new Samples[threads];
        segC = new Samples[threads];
        at = new Samples[threads];
        latency = new Samples[threads];
        others = new Samples[threads];
        gaps = new Samples[threads];
        for (int t = 0; t < threads; t++) {
            at[t] = new Samples();
            latency[t] = new Samples();
            others[t] = new Samples();
            gaps[t] = new Samples();
            segA[t] = new Samples();
            segB[t] = new Samples();
            segC[t] = new Samples();
        }
    }

    private static final java.lang.invoke.VarHandle RELEASE_SENT = hook("traceReleaseSent");
    private static final java.lang.invoke.VarHandle MESSAGE_READ = hook("traceMessageRead");

    private static java.lang.invoke.VarHandle hook(String name) {
        try {
            Class<?> type = Class.forName("io.github.distlock.redisson.HandoffLocks");
            return java.lang.invoke.MethodHandles.privateLookupIn(type, java.lang.invoke.MethodHandles.lookup())
                    .findStaticVarHandle(type, name, long.class);
        }
        catch (ReflectiveOperationException | RuntimeException ex) {
            return null;
        }
    }

    /** The segments of a hand-off that started (previous body end) at {@code releaseStarted}. */
    void segments(int t, long releaseStarted, long acquiredAt) {
        if (RELEASE_SENT == null) {
            return;
        }
        long sent = (long) RELEASE_SENT.getVolatile();
        long read = (long) MESSAGE_READ.getVolatile();
        if (releaseStarted <= sent && sent <= read && read <= acquiredAt) {
            segA[t].add(sent - releaseStarted);
            segB[t].add(read - sent);
            segC[t].add(acquiredAt - read);
        }
    }

    /** Per thread (by name, digits folded) of this JVM and of redis-server: run time and run-queue wait, ns. */
    private static java.util.Map<String, long[]> sched(long redisPid) {
        java.util.Map<String, long[]> byName = new java.util.TreeMap<>();
        for (String pid : new String[] {"self", Long.toString(redisPid)}) {
            java.io.File[] tasks = new java.io.File("/proc/" + pid + "/task").listFiles();
            if (tasks == null) {
                continue;
            }
            for (java.io.File task : tasks) {
                try {
                    String comm = java.nio.file.Files.readString(task.toPath().resolve("comm")).trim()
                            .replaceAll("\\d+", "#");
                    String[] stat = java.nio.file.Files.readString(task.toPath().resolve("schedstat")).trim().split(" ");
                    long[] sum = byName.computeIfAbsent((pid.equals("self") ? "" : "redis:") + comm, k -> new long[3]);
                    sum[0] += Long.parseLong(stat[0]);
                    sum[1] += Long.parseLong(stat[1]);
                    sum[2] += Long.parseLong(stat[2]);
                }
                catch (java.io.IOException | RuntimeException ex) {
                    // a thread that ended meanwhile
                }
            }
        }
        return byName;
    }

    static boolean enabled() {
        return Boolean.getBoolean("bench.hotkey.trace");
    }

    /** Called by thread {@code t} only, inside the critical section. */
    void add(int t, long acquiredAt, long latencyNanos, long othersFirst, long gap) {
        at[t].add(acquiredAt);
        latency[t].add(latencyNanos);
        others[t].add(othersFirst);
        gaps[t].add(gap);
    }

    private record Acquisition(int thread, long at, long latency, long others, long gap) {
    }

    /** Call after the slot's threads were joined. */
    void print(String what, PrintStream out) {
        probing = false;
        try {
            probe.join();
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        List<Acquisition> all = new ArrayList<>();
        for (int t = 0; t < at.length; t++) {
            Samples a = at[t];
            for (int i = 0; i < a.size(); i++) {
                all.add(new Acquisition(t, a.get(i), latency[t].get(i), others[t].get(i), gaps[t].get(i)));
            }
        }
        all.sort(Comparator.comparingLong(Acquisition::at));
        if (all.size() < 10 * at.length) {
            return;
        }
        // the start, where every thread asks at once, is no steady state: from the threads' second round on
        long from = all.get(2 * at.length).at();
        List<Acquisition> steady = all.stream().filter(a -> a.at() >= from + 0 && a.at() - a.latency() >= from).toList();
        long[] lat = steady.stream().mapToLong(Acquisition::latency).sorted().toArray();
        long[] gap = steady.stream().mapToLong(Acquisition::gap).filter(g -> g >= 0).sorted().toArray();
        long span = steady.get(steady.size() - 1).at() - steady.get(0).at();
        java.util.Map<String, long[]> schedAfter = sched(redisPid);
        out.printf(Locale.ROOT, "%n-- trace: %s: %d steady acquisitions in %.2f s (%.0f/s)%n", what, steady.size(),
                span / 1e9, steady.size() * 1e9 / span);
        out.printf(Locale.ROOT, "latency ms p50 %.2f p90 %.2f p99 %.2f p99.9 %.2f max %.2f; mean %.2f%n", p(lat, 50),
                p(lat, 90), p(lat, 99), p(lat, 99.9), lat[lat.length - 1] / 1e6, Arrays.stream(lat).average().orElse(0) / 1e6);
        out.printf(Locale.ROOT, "hand-off gap ms p50 %.3f p99 %.3f p99.9 %.3f max %.2f; mean %.3f; > 1 ms: %d, > 2 ms: %d, "
                        + "> 5 ms: %d, > 10 ms: %d; time in gaps > 2 ms: %.1f ms of %.0f%n",
                p(gap, 50), p(gap, 99), p(gap, 99.9), gap[gap.length - 1] / 1e6, Arrays.stream(gap).average().orElse(0) / 1e6,
                count(gap, 1), count(gap, 2), count(gap, 5), count(gap, 10),
                Arrays.stream(gap).filter(g -> g > 2_000_000).sum() / 1e6, span / 1e6);
        long fifo = at.length - 1;
        long[] oth = steady.stream().mapToLong(Acquisition::others).sorted().toArray();
        out.printf(Locale.ROOT, "others served while waiting (FIFO: %d): p1 %d p50 %d p99 %d max %d; > %d: %d of %d%n",
                fifo, oth[(int) (oth.length * 0.01)], oth[oth.length / 2], oth[(int) (oth.length * 0.99)],
                oth[oth.length - 1], fifo, Arrays.stream(oth).filter(o -> o > fifo).count(), oth.length);
        // the slowest acquisitions: what was in their wait window
        long p99 = (long) (p(lat, 99) * 1e6);
        long[] atSorted = steady.stream().mapToLong(Acquisition::at).toArray();
        int slow = 0;
        int withLongGap = 0;
        int overtaken = 0;
        double sumMaxGap = 0;
        double sumMeanGap = 0;
        for (Acquisition a : steady) {
            if (a.latency() < p99) {
                continue;
            }
            slow++;
            long start = a.at() - a.latency();
            int i = lowerBound(atSorted, start);
            long maxGap = 0;
            long gapSum = 0;
            int n = 0;
            for (int j = i; j < steady.size() && steady.get(j).at() <= a.at(); j++) {
                long g = steady.get(j).gap();
                if (g > 0) {
                    maxGap = Math.max(maxGap, g);
                    gapSum += g;
                    n++;
                }
            }
            sumMaxGap += maxGap;
            sumMeanGap += (n == 0) ? 0 : gapSum / (double) n;
            if (maxGap > LONG_GAP_NANOS) {
                withLongGap++;
            }
            if (a.others() > fifo) {
                overtaken++;
            }
        }
        out.printf(Locale.ROOT, "acquisitions >= p99 (%d): a gap > 5 ms in their wait: %d; overtaken (others > %d): %d; "
                        + "mean longest gap in their wait %.2f ms, mean gap in their wait %.3f ms (all: %.3f)%n",
                slow, withLongGap, fifo, overtaken, sumMaxGap / Math.max(1, slow) / 1e6,
                sumMeanGap / Math.max(1, slow) / 1e6, Arrays.stream(gap).average().orElse(0) / 1e6);
        // latency p99 per 250 ms window: a tail spread evenly, or bursts
        StringBuilder windows = new StringBuilder();
        long window = 250_000_000;
        for (long w = steady.get(0).at(); w < steady.get(steady.size() - 1).at(); w += window) {
            long lo = w;
            long[] in = steady.stream().filter(a -> a.at() >= lo && a.at() < lo + window).mapToLong(Acquisition::latency)
                    .sorted().toArray();
            if (in.length > 0) {
                windows.append(String.format(Locale.ROOT, " %.0f/%.0f", p(in, 50), p(in, 99)));
            }
        }
        out.println("per 250 ms: p50/p99 ms:" + windows);
        printSegments(out);
        // were the long hand-offs moments when any woken thread waited for a CPU?
        long probeLateSum = 0;
        for (int i = 0; i < probeLate.size(); i++) {
            probeLateSum += probeLate.get(i);
        }
        int longGaps = 0;
        int overlapping = 0;
        int control = 0;
        for (Acquisition a : steady) {
            if (a.gap() > 2_000_000) {
                longGaps++;
                if (probeOverlaps(a.at() - a.gap(), a.at())) {
                    overlapping++;
                }
                // the same interval 37 ms earlier: how often a random moment overlaps
                if (probeOverlaps(a.at() - a.gap() - 37_000_000, a.at() - 37_000_000)) {
                    control++;
                }
            }
        }
        out.printf(Locale.ROOT, "probe (1 ms sleeps): %d wake-ups > 1 ms late, %.1f ms late in all (%.1f %% of the time); "
                        + "hand-offs > 2 ms: %d, of which %d overlap a late probe wake-up (the same intervals 37 ms "
                        + "earlier: %d)%n", probeLate.size(),
                probeLateSum / 1e6, 100.0 * probeLateSum / span, longGaps, overlapping, control);
        long cycles = all.size();
        StringBuilder sched = new StringBuilder();
        long runSum = 0;
        long waitSum = 0;
        for (var e : schedAfter.entrySet()) {
            long[] before = schedBefore.getOrDefault(e.getKey(), new long[3]);
            long run = e.getValue()[0] - before[0];
            long wait = e.getValue()[1] - before[1];
            long slices = e.getValue()[2] - before[2];
            runSum += run;
            waitSum += wait;
            if (run + wait > cycles * 2_000L) {
                sched.append(String.format(Locale.ROOT, " %s %.0f/%.0f/%.2f", e.getKey(), run / 1e3 / cycles,
                        wait / 1e3 / cycles, slices / (double) cycles));
            }
        }
        out.printf(Locale.ROOT, "sched per cycle (µs on CPU / µs runnable waiting for a CPU / slices): all %.0f/%.0f;%s%n",
                runSum / 1e3 / cycles, waitSum / 1e3 / cycles, sched);
        int listed = 0;
        for (Acquisition a : steady) {
            if (a.gap() > LONG_GAP_NANOS && listed++ < 40) {
                long wall = startWallMillis + (a.at() - startNanos) / 1_000_000;
                out.printf(Locale.ROOT, "  gap %.2f ms ending at +%.1f ms (wall %tT.%03d) before thread %d%n",
                        a.gap() / 1e6, (a.at() - startNanos) / 1e6, wall, wall % 1000, a.thread());
            }
        }
    }

    private void printSegments(PrintStream out) {
        Samples a = Slots.merge(segA).sorted();
        Samples b = Slots.merge(segB).sorted();
        Samples c = Slots.merge(segC).sorted();
        if (a.size() == 0) {
            return;
        }
        out.printf(Locale.ROOT, "hand-off segments (%d), ms p50/p99/p99.9/mean: body end -> release sent %s; release sent "
                        + "-> grant read by listener %s; listener -> next body %s%n", a.size(), seg(a), seg(b), seg(c));
    }

    private static String seg(Samples s) {
        return String.format(Locale.ROOT, "%.3f/%.3f/%.3f/%.3f", s.percentile(50) / 1e6, s.percentile(99) / 1e6,
                s.percentile(99.9) / 1e6, s.sum() / 1e6 / s.size());
    }

    private boolean probeOverlaps(long from, long to) {
        for (int i = 0; i < probeLate.size(); i++) {
            long lateFrom = probeLateAt.get(i) + 1_000_000;
            long lateTo = lateFrom + probeLate.get(i);
            if (lateFrom < to && lateTo > from) {
                return true;
            }
        }
        return false;
    }

    private static int lowerBound(long[] sorted, long value) {
        int i = Arrays.binarySearch(sorted, value);
        return (i < 0) ? -i - 1 : i;
    }

    private static long count(long[] values, long ms) {
        return Arrays.stream(values).filter(v -> v > ms * 1_000_000).count();
    }

    private static double p(long[] sorted, double p) {
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] / 1e6;
    }
}

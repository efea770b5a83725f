package io.github.distlock.benchmarks;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import io.github.distlock.testsupport.RedisCluster;
import io.github.distlock.testsupport.RedisServer;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The {@code @DistributedLock} cycle on a Redis Cluster next to a single server, in one run: one JVM starts a single
 * {@code redis-server}, a cluster of 3 masters without replicas and a cluster of 3 masters + 3 replicas, and one
 * application per variant (the 3+3 cluster twice: Redisson's {@code checkLockSyncedSlaves} on, its default, and off).
 *
 * <p>The variants take turns in time slots: in each round, at each thread count, every variant runs alone for the
 * same few seconds, in an order that rotates from round to round, so a burst of load on the (shared) machine hits each
 * variant in turn instead of one of them. Each variant is measured at its full thread count (not sharing the threads
 * with the others, as {@link InterleavedComparison} does), so its cycles/s are what one application gets from that
 * deployment. The ratio to the single server is computed per round, from neighbouring slots; its spread over the rounds
 * is the error bar.
 *
 * <p>The cycle: a {@code @DistributedLock(waitTime = 0)} method with a watchdog lease and an empty body, called through
 * the Spring proxy, one key per thread (distinct keys). Around each slot the harness reads {@code INFO commandstats}
 * on the masters (Redis commands and {@code WAIT}s per cycle) and {@code INFO cpu} on every node of the deployment
 * (Redis CPU per cycle, replicas included), and the JVM's CPU time (client CPU per cycle; the idle applications'
 * background work is in it too, a few timer ticks).
 */
public final class ClusterComparison {

    /** The deployments; {@link #SINGLE} first: the others are compared with it. */
    enum Variant {
        SINGLE("single server"),
        MASTERS_ONLY("cluster, 3 masters, no replicas"),
        REPLICATED("cluster, 3 masters + 3 replicas, checkLockSyncedSlaves on (default)"),
        REPLICATED_UNCHECKED("cluster, 3 masters + 3 replicas, checkLockSyncedSlaves off");

        final String label;

        Variant(String label) {
            this.label = label;
        }
    }

    /** One variant's totals at one thread count, over all measured rounds. */
    record Result(Variant variant, int threads, String keysPerMaster, long cycles, double cyclesPerSecond,
            double p50Us, double p99Us, double[] roundCyclesPerSecond, double vsSingle, double vsSingleMin,
            double vsSingleMax, double p50VsSingle, double commandsPerCycle, double waitsPerCycle,
            Map<String, Double> commandsByName, double redisCpuUsPerCycle, double clientCpuUsPerCycle,
            Map<String, Long> failures) {
    }

    /** The command name of {@code WAIT} in {@code INFO commandstats}: the replication waits of a cycle. */
    private static final String WAIT = "wait";

    private ClusterComparison() {
    }

    /**
     * Usage: {@code ClusterComparison [rounds] [seconds per slot] [threads,...]}; defaults 4 rounds of 3 s slots at 1,
     * 8 and 64 threads (about 3.5 minutes with the start-up).
     */
    public static void main(String[] args) throws Exception {
        int rounds = (args.length > 0) ? Integer.parseInt(args[0]) : 4;
        int seconds = (args.length > 1) ? Integer.parseInt(args[1]) : 3;
        int[] threads = (args.length > 2) ? HandoffLatency.parseInts(args[2]) : new int[] {1, 8, 64};
        System.out.println("load average at start: " + Counters.loadAverage());
        List<Result> results = run(threads, rounds, seconds * 1000L);
        print(results, System.out);
        System.out.println();
        System.out.println("load average at the end: " + Counters.loadAverage());
    }

    /** Starts every deployment and application, measures, and stops all of it again, also when something fails. */
    static List<Result> run(int[] threads, int rounds, long slotMillis) throws Exception {
        try (Setup setup = Setup.start()) {
            return measure(setup, threads, rounds, slotMillis);
        }
    }

    /**
     * Measures on a running {@link Setup}: one discarded warm-up slot per variant and thread count, then
     * {@code rounds} rounds of one slot per thread count and variant.
     */
    static List<Result> measure(Setup setup, int[] threads, int rounds, long slotMillis) throws InterruptedException {
        Variant[] variants = Variant.values();
        int v = variants.length;
        Totals[][] totals = new Totals[threads.length][v];
        for (int ti = 0; ti < threads.length; ti++) {
            for (int i = 0; i < v; i++) {
                totals[ti][i] = new Totals(rounds, threads[ti]);
                // warm-up: the JIT, Redisson's pools, script loading on every master
                slot(setup.targets.get(i), threads[ti], Math.max(500, slotMillis / 2));
            }
        }
        for (int r = 0; r < rounds; r++) {
            progress("round " + (r + 1) + " of " + rounds + ", load average " + Counters.loadAverage());
            for (int ti = 0; ti < threads.length; ti++) {
                for (int k = 0; k < v; k++) {
                    // rotate the order so that no variant always runs first (after the previous thread count) or last
                    int i = (r + k) % v;
                    Target target = setup.targets.get(i);
                    Counters before = counters(target);
                    Slot slot = slot(target, threads[ti], slotMillis);
                    Counters after = counters(target);
                    totals[ti][i].add(r, slot.cycles(), slot.outcome(), before, after);
                }
            }
        }
        List<Result> results = new ArrayList<>();
        for (int ti = 0; ti < threads.length; ti++) {
            Totals single = totals[ti][Variant.SINGLE.ordinal()];
            double singleP50 = single.samples.sorted().percentile(50);
            for (int i = 0; i < v; i++) {
                Totals t = totals[ti][i];
                double[] ratios = t.ratesPerRoundTo(single);
                Samples sorted = t.samples.sorted();
                long cycles = t.cycles();
                long waits = t.opsByName.getOrDefault(WAIT, 0L);
                results.add(new Result(variants[i], threads[ti], setup.targets.get(i).keysPerMaster(threads[ti]),
                        cycles, t.rate(), sorted.percentile(50) / 1e3, sorted.percentile(99) / 1e3, t.roundRates,
                        t.rate() / single.rate(), min(ratios), max(ratios), sorted.percentile(50) / singleP50,
                        t.ops / (double) cycles, waits / (double) cycles, t.opsPerCycleByName(),
                        t.serverCpuNanos / 1e3 / cycles, t.clientCpuNanos / 1e3 / cycles, t.failures));
            }
        }
        return results;
    }

    /** {@code threads} threads call the target's locked method on keys of their own for {@code millis} ms. */
    private static Slot slot(Target target, int threads, long millis) throws InterruptedException {
        Samples[] perThread = new Samples[threads];
        Slots.Outcome outcome = Slots.run(target.variant.label, "cluster-comparison-", threads, millis, t -> {
            Samples mine = perThread[t] = new Samples();
            String id = target.id(t);
            return () -> {
                long begin = System.nanoTime();
                target.service.tryOnceWatchdog(id);
                mine.add(System.nanoTime() - begin);
                return true;
            };
        }, Slots::causeChain);
        Slots.Cycles cycles = Slots.Cycles.of(perThread);
        if (cycles.all().size() == 0) {
            throw new IllegalStateException(target.variant.label + ": no lock cycle succeeded at " + threads
                    + " threads; failures: " + outcome.failures());
        }
        return new Slot(cycles, outcome);
    }

    /** Prints one table: every variant at every thread count, with its ratio to the single server. */
    static void print(List<Result> results, PrintStream out) {
        out.println();
        out.println("| threads | deployment | keys per master | cycles/s | p50 µs | p99 µs | cycles/s vs single "
                + "(per-round min–max) | p50 vs single | Redis cmds/cycle (masters) | WAIT/cycle | Redis CPU µs/cycle "
                + "(all nodes) | client CPU µs/cycle | failed calls |");
        out.println("|---:|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|");
        for (Result r : results) {
            String failures = r.failures().isEmpty() ? "0" : r.failures().toString();
            out.printf(Locale.ROOT,
                    "| %d | %s | %s | %.0f | %.0f | %.0f | %.3f (%.3f–%.3f) | %.2f | %.1f | %.2f | %.0f | %.0f | %s |%n",
                    r.threads(), r.variant().label, r.keysPerMaster(), r.cyclesPerSecond(), r.p50Us(), r.p99Us(),
                    r.vsSingle(), r.vsSingleMin(), r.vsSingleMax(), r.p50VsSingle(), r.commandsPerCycle(),
                    r.waitsPerCycle(), r.redisCpuUsPerCycle(), r.clientCpuUsPerCycle(), failures);
        }
        out.println();
        out.println("Commands per cycle on the masters by name (INFO commandstats; commands run inside a script are "
                + "counted too, our own INFO calls are not):");
        out.println();
        out.println("| threads | deployment | commands per cycle |");
        out.println("|---:|---|---|");
        for (Result r : results) {
            out.printf(Locale.ROOT, "| %d | %s | %s |%n", r.threads(), r.variant().label,
                    Cells.perCycle(r.commandsByName(), "%s %.2f", ", "));
        }
    }

    private static void progress(String what) {
        System.err.printf(Locale.ROOT, "[%tT] cluster comparison: %s%n", System.currentTimeMillis(), what);
    }

    private static double min(double[] values) {
        double min = Double.MAX_VALUE;
        for (double value : values) {
            min = Math.min(min, value);
        }
        return min;
    }

    private static double max(double[] values) {
        double max = -Double.MAX_VALUE;
        for (double value : values) {
            max = Math.max(max, value);
        }
        return max;
    }

    /** One slot's cycle times (successful cycles only), cycles per thread, its length and failed calls. */
    private record Slot(Slots.Cycles cycles, Slots.Outcome outcome) {
    }

    /** What one variant runs on: its application, and the Redis nodes its cycles touch. */
    static final class Target {

        final Variant variant;
        final LockedService service;
        final ConfigurableApplicationContext context;
        /** The nodes that take the lock scripts: every command and WAIT of a cycle is counted here. */
        final List<Integer> masterPorts;
        /** Every node of the deployment, replicas included: their CPU is the deployment's cost. */
        final List<Integer> nodePorts;
        /** The cluster, to place keys on masters; {@code null} for the single server. */
        final RedisCluster cluster;

        Target(Variant variant, ConfigurableApplicationContext context, List<Integer> masterPorts,
                List<Integer> nodePorts, RedisCluster cluster) {
            this.variant = variant;
            this.context = context;
            this.service = context.getBean(LockedService.class);
            this.masterPorts = List.copyOf(masterPorts);
            this.nodePorts = List.copyOf(nodePorts);
            this.cluster = cluster;
        }

        /** The id of thread {@code t}: distinct per thread and per variant, so two variants never share a key. */
        String id(int t) {
            return "c" + variant.ordinal() + ":t" + t;
        }

        /** The Redis key of thread {@code t}'s lock: distlock's prefix + the annotation's {@code 'bench:' + #id}. */
        String key(int t) {
            return LockCycles.PREFIX + "bench:" + id(t);
        }

        /** How many of the {@code threads} keys each master serves, e.g. {@code 3/2/3}. */
        String keysPerMaster(int threads) {
            if (cluster == null) {
                return Integer.toString(threads);
            }
            Map<Integer, Integer> perMaster = new LinkedHashMap<>();
            masterPorts.forEach(port -> perMaster.put(port, 0));
            for (int t = 0; t < threads; t++) {
                perMaster.merge(cluster.masterForKey(key(t)).port(), 1, Integer::sum);
            }
            return String.join("/", perMaster.values().stream().map(String::valueOf).toList());
        }
    }

    /**
     * The servers and applications of one run, started together before the first slot and stopped together after the
     * last (or when anything fails): a single server, a 3-master cluster, a 3+3 cluster, one application per variant.
     */
    static final class Setup implements AutoCloseable {

        final List<Target> targets;
        private final List<AutoCloseable> opened;

        private Setup(List<Target> targets, List<AutoCloseable> opened) {
            this.targets = List.copyOf(targets);
            this.opened = opened;
        }

        static Setup start() {
            List<AutoCloseable> opened = new ArrayList<>();
            try {
                long begin = System.nanoTime();
                RedisServer single = RedisServer.start();
                opened.add(single);
                RedisCluster mastersOnly = RedisCluster.start(3, 0);
                opened.add(mastersOnly);
                RedisCluster replicated = RedisCluster.start(3, 1);
                opened.add(replicated);
                progress(String.format(Locale.ROOT, "servers up in %.1f s: single %s, %s, %s",
                        (System.nanoTime() - begin) / 1e9, single.address(), mastersOnly, replicated));
                List<Target> targets = new ArrayList<>();
                for (Variant variant : Variant.values()) {
                    ConfigurableApplicationContext context = switch (variant) {
                        case SINGLE -> BenchApplication.start(RedissonVariant.DEFAULT,
                                "spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + single.port());
                        case MASTERS_ONLY -> BenchApplication.start(RedissonVariant.DEFAULT, nodes(mastersOnly));
                        case REPLICATED -> BenchApplication.start(RedissonVariant.DEFAULT, nodes(replicated));
                        case REPLICATED_UNCHECKED -> BenchApplication.start(RedissonVariant.DEFAULT,
                                nodes(replicated), "bench.check-lock-synced-slaves=false");
                    };
                    opened.add(context);
                    targets.add(switch (variant) {
                        case SINGLE -> new Target(variant, context, List.of(single.port()), List.of(single.port()),
                                null);
                        case MASTERS_ONLY -> new Target(variant, context, masterPorts(mastersOnly),
                                allPorts(mastersOnly), mastersOnly);
                        case REPLICATED, REPLICATED_UNCHECKED -> new Target(variant, context,
                                masterPorts(replicated), allPorts(replicated), replicated);
                    });
                }
                progress(String.format(Locale.ROOT, "servers and applications up in %.1f s",
                        (System.nanoTime() - begin) / 1e9));
                return new Setup(targets, opened);
            }
            catch (RuntimeException | Error ex) {
                closeAll(opened, ex);
                throw ex;
            }
        }

        private static String nodes(RedisCluster cluster) {
            return "spring.data.redis.cluster.nodes=" + String.join(",", cluster.nodeAddresses());
        }

        /** The masters at start-up (nodes() lists them first); nothing fails over during a run. */
        private static List<Integer> masterPorts(RedisCluster cluster) {
            return cluster.masters().stream().map(RedisCluster.Node::port).sorted().toList();
        }

        private static List<Integer> allPorts(RedisCluster cluster) {
            return cluster.nodes().stream().map(RedisCluster.Node::port).toList();
        }

        /** Applications first (their clients disconnect cleanly), then the servers: the reverse of the start. */
        @Override
        public void close() {
            RuntimeException failure = new IllegalStateException("Could not stop every server and application");
            closeAll(opened, failure);
            if (failure.getSuppressed().length > 0) {
                throw failure;
            }
        }

        private static void closeAll(List<AutoCloseable> opened, Throwable failure) {
            for (int i = opened.size() - 1; i >= 0; i--) {
                try {
                    opened.get(i).close();
                }
                catch (Exception ex) {
                    failure.addSuppressed(ex);
                }
            }
        }
    }

    /**
     * The commands on the deployment's masters (every command and WAIT of a cycle runs there) and the CPU time of all
     * its nodes, replicas included, at one moment, and the JVM's CPU time.
     */
    private static Counters counters(Target target) {
        Map<String, Long> byName = new HashMap<>();
        for (int port : target.masterPorts) {
            Counters.addRedisCommands(port, byName);
        }
        double cpu = 0;
        for (int port : target.nodePorts) {
            cpu += Counters.redisCpuSeconds(port);
        }
        return new Counters(byName, (long) (cpu * 1e9), Counters.jvmCpuNanos());
    }
}

package io.github.distlock.benchmarks;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import io.github.distlock.LockType;
import io.github.distlock.benchmarks.LockCycles.Impl;
import io.github.distlock.benchmarks.LockCycles.Lease;
import io.lettuce.core.api.sync.RedisCommands;

/**
 * Where a cycle's cost goes: Redis commands per cycle (from {@code INFO commandstats} deltas, which count the commands
 * a Lua script runs as well as the script itself), Redis CPU and network bytes per cycle (from {@code INFO cpu} and
 * {@code INFO stats}), the client JVM's CPU and allocation per cycle (all of its threads), and its thread count.
 *
 * <p>With client and Redis sharing two cores, throughput at 8 or more threads is bounded by (client + Redis) CPU per
 * cycle, so these columns explain the throughput differences of {@link LockCycleBenchmark}.
 */
public final class RedisProfile {

    /** One measured configuration. */
    record Case(String label, Impl impl, Lease lease, RedissonVariant variant, int threads, boolean contended,
            LockType type) {

        Case(String label, Impl impl, Lease lease, RedissonVariant variant, int threads, boolean contended) {
            this(label, impl, lease, variant, threads, contended, LockType.REENTRANT);
        }
    }

    /** Per-cycle costs of one case. */
    record Result(Case c, long cycles, double cyclesPerSecond, double commands, Map<String, Double> byCommand,
            double redisCpuUs, double clientCpuUs, double allocBytes, double netInBytes, double netOutBytes,
            int jvmThreads, int redissonThreads) {
    }

    private RedisProfile() {
    }

    /**
     * Usage: {@code RedisProfile [cycles per case] [variants|types]}; {@code variants} profiles the Redisson configs,
     * {@code types} the lock types, two-key calls and nested calls.
     */
    public static void main(String[] args) throws Exception {
        int cycles = (args.length > 0) ? Integer.parseInt(args[0]) : 20_000;
        String which = (args.length > 1) ? args[1] : "";
        List<Case> cases = switch (which) {
            case "variants" -> variantCases();
            case "types" -> typeCases();
            default -> defaultCases();
        };
        print(run(cases, cycles), System.out);
    }

    /**
     * The template with each lock type, two keys per call and a nested call (one key per thread), against Redisson's own
     * re-entry; each type on one hot key at 8 threads (watchdog everywhere). Not at 64 threads: the warm-up
     * of 2 000 cycles per thread would take minutes on one hot key.
     */
    static List<Case> typeCases() {
        List<Case> cases = new ArrayList<>();
        for (LockType type : LockType.values()) {
            cases.add(new Case("LockTemplate, " + type, Impl.TEMPLATE, Lease.WATCHDOG, RedissonVariant.DEFAULT, 1, false,
                    type));
        }
        cases.add(new Case("LockTemplate, 2 keys per call", Impl.MULTI, Lease.WATCHDOG, RedissonVariant.DEFAULT, 1, false));
        cases.add(new Case("LockTemplate, nested call on the held key", Impl.TEMPLATE_NESTED, Lease.WATCHDOG,
                RedissonVariant.DEFAULT, 1, false));
        cases.add(new Case("Redisson, re-entered once", Impl.REDISSON_NESTED, Lease.WATCHDOG, RedissonVariant.DEFAULT, 1,
                false));
        for (LockType type : LockType.values()) {
            cases.add(new Case("LockTemplate, " + type + ", 8 thr, 1 hot key", Impl.TEMPLATE, Lease.WATCHDOG,
                    RedissonVariant.DEFAULT, 8, true, type));
        }
        return cases;
    }

    /** Raw Redisson (watchdog, distinct keys) under every {@link RedissonVariant}, at 1, 8 and 64 threads. */
    static List<Case> variantCases() {
        List<Case> cases = new ArrayList<>();
        for (int threads : new int[] {1, 8, 64}) {
            for (RedissonVariant variant : RedissonVariant.values()) {
                if (variant == RedissonVariant.INLINE_LISTENERS) {
                    // a diagnostic of the hot-key hand-off, not a configuration anyone should run
                    continue;
                }
                cases.add(new Case("Redisson, watchdog, " + threads + " thr, " + variant, Impl.REDISSON, Lease.WATCHDOG,
                        variant, threads, false));
            }
        }
        return cases;
    }

    static List<Case> defaultCases() {
        return List.of(
                new Case("Redisson, watchdog", Impl.REDISSON, Lease.WATCHDOG, RedissonVariant.DEFAULT, 1, false),
                new Case("Redisson, fixed lease", Impl.REDISSON, Lease.FIXED, RedissonVariant.DEFAULT, 1, false),
                new Case("LockTemplate, watchdog", Impl.TEMPLATE, Lease.WATCHDOG, RedissonVariant.DEFAULT, 1, false),
                new Case("@DistributedLock, watchdog", Impl.ANNOTATION, Lease.WATCHDOG, RedissonVariant.DEFAULT, 1, false),
                new Case("@DistributedLock, fixed lease", Impl.ANNOTATION, Lease.FIXED, RedissonVariant.DEFAULT, 1, false),
                new Case("raw SET NX PX + Lua", Impl.RAW, Lease.FIXED, RedissonVariant.DEFAULT, 1, false),
                new Case("Redisson, watchdog, PROPOSED config", Impl.REDISSON, Lease.WATCHDOG, RedissonVariant.PROPOSED, 1, false),
                new Case("Redisson, watchdog, 8 thr", Impl.REDISSON, Lease.WATCHDOG, RedissonVariant.DEFAULT, 8, false),
                new Case("Redisson, watchdog, 8 thr, PROPOSED", Impl.REDISSON, Lease.WATCHDOG, RedissonVariant.PROPOSED, 8, false),
                new Case("@DistributedLock, watchdog, 8 thr", Impl.ANNOTATION, Lease.WATCHDOG, RedissonVariant.DEFAULT, 8, false),
                new Case("raw, 8 thr", Impl.RAW, Lease.FIXED, RedissonVariant.DEFAULT, 8, false),
                new Case("Redisson, watchdog, 8 thr, 1 hot key", Impl.REDISSON, Lease.WATCHDOG, RedissonVariant.DEFAULT, 8, true),
                new Case("raw (1 ms polling), 8 thr, 1 hot key", Impl.RAW, Lease.FIXED, RedissonVariant.DEFAULT, 8, true));
    }

    static List<Result> run(List<Case> cases, int cycles) throws Exception {
        List<Result> results = new ArrayList<>();
        // the first case in a fresh JVM would also pay for class loading and most of the JIT: run it once, unrecorded
        try (BenchEnvironment env = BenchEnvironment.start(cases.get(0).variant())) {
            measure(env, cases.get(0), cycles);
        }
        for (Case c : cases) {
            try (BenchEnvironment env = BenchEnvironment.start(c.variant())) {
                results.add(measure(env, c, cycles));
            }
            catch (IllegalStateException ex) {
                // a hot-key case can fail under heavy load (a waiter past its 30 s wait): a row of its own, not the end
                Throwable cause = (ex.getCause() != null) ? ex.getCause() : ex;
                results.add(new Result(c, 0, 0, 0, Map.of("failed: " + cause.getMessage(), Double.NaN), 0, 0, 0, 0, 0,
                        0, 0));
            }
        }
        return results;
    }

    private static Result measure(BenchEnvironment env, Case c, int cycles) throws Exception {
        LockCycles.Cycle cycle = LockCycles.cycle(env, c.impl(), c.lease(), c.contended(), c.type());
        // warm up the JIT and Redisson's pools so the deltas show the steady state
        runThreads(cycle, c, Math.max(2_000, cycles / 4));
        RedisCommands<String, String> redis = env.rawLocks().commands();
        Snapshot before = Snapshot.take(redis);
        long start = System.nanoTime();
        int per = cycles / c.threads();
        runThreads(cycle, c, per);
        long elapsed = System.nanoTime() - start;
        Snapshot after = Snapshot.take(redis);
        long done = (long) per * c.threads();

        Map<String, Double> byCommand = new TreeMap<>();
        after.commandCalls.forEach((name, calls) -> {
            long delta = calls - before.commandCalls.getOrDefault(name, 0L);
            // the two INFO calls of the snapshots themselves are not the lock's
            if (name.equals("info")) {
                delta -= 2;
            }
            if (delta > 0) {
                byCommand.put(name, delta / (double) done);
            }
        });
        double commands = byCommand.values().stream().mapToDouble(Double::doubleValue).sum();
        return new Result(c, done, done * 1e9 / elapsed, commands, byCommand,
                (after.redisCpuSeconds - before.redisCpuSeconds) * 1e6 / done,
                (after.clientCpuNanos - before.clientCpuNanos) / 1e3 / done,
                (after.allocatedBytes(before)) / (double) done,
                (after.netIn - before.netIn) / (double) done,
                (after.netOut - before.netOut) / (double) done,
                after.threads, after.redissonThreads);
    }

    private static void runThreads(LockCycles.Cycle cycle, Case c, int perThread) throws InterruptedException {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < c.threads(); t++) {
            String id = c.contended() ? "hot" : "t" + t;
            Thread thread = new Thread(() -> {
                long start = System.nanoTime();
                try {
                    for (int i = 0; i < perThread; i++) {
                        start = System.nanoTime();
                        if (!cycle.run(id)) {
                            throw new IllegalStateException("lock '" + id + "' not acquired");
                        }
                    }
                }
                catch (Throwable ex) {
                    // how long the failed call took: a full wait, or an earlier give-up
                    failure.compareAndSet(null, new IllegalStateException(ex + " (after "
                            + (System.nanoTime() - start) / 1_000_000 + " ms)", ex));
                }
            }, "profile-" + t);
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        if (failure.get() != null) {
            throw new IllegalStateException(c.label() + " failed", failure.get());
        }
    }

    /** Counters at one moment, on the Redis side and the client side. */
    private static final class Snapshot {

        final Map<String, Long> commandCalls = new HashMap<>();
        double redisCpuSeconds;
        long netIn;
        long netOut;
        long clientCpuNanos;
        final Map<Long, Long> allocatedByThread = new HashMap<>();
        int threads;
        int redissonThreads;

        static Snapshot take(RedisCommands<String, String> redis) {
            Snapshot s = new Snapshot();
            for (String line : redis.info("commandstats").split("\r?\n")) {
                // cmdstat_evalsha:calls=3,usec=...
                if (line.startsWith("cmdstat_")) {
                    String name = line.substring(8, line.indexOf(':'));
                    String calls = line.substring(line.indexOf("calls=") + 6, line.indexOf(',', line.indexOf("calls=")));
                    s.commandCalls.put(name, Long.parseLong(calls));
                }
            }
            Map<String, String> info = parse(redis.info("cpu") + "\n" + redis.info("stats"));
            s.redisCpuSeconds = Double.parseDouble(info.get("used_cpu_user")) + Double.parseDouble(info.get("used_cpu_sys"));
            s.netIn = Long.parseLong(info.get("total_net_input_bytes"));
            s.netOut = Long.parseLong(info.get("total_net_output_bytes"));
            var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
            s.clientCpuNanos = os.getProcessCpuTime();
            var mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            long[] ids = mx.getAllThreadIds();
            long[] allocated = mx.getThreadAllocatedBytes(ids);
            for (int i = 0; i < ids.length; i++) {
                if (allocated[i] >= 0) {
                    s.allocatedByThread.put(ids[i], allocated[i]);
                }
            }
            s.threads = mx.getThreadCount();
            s.redissonThreads = (int) Thread.getAllStackTraces().keySet().stream()
                    .filter(thread -> thread.getName().startsWith("redisson")).count();
            return s;
        }

        /** Bytes allocated since {@code before} by every thread alive now (threads that ended meanwhile are lost). */
        long allocatedBytes(Snapshot before) {
            long sum = 0;
            for (Map.Entry<Long, Long> e : allocatedByThread.entrySet()) {
                sum += e.getValue() - before.allocatedByThread.getOrDefault(e.getKey(), 0L);
            }
            return sum;
        }

        private static Map<String, String> parse(String info) {
            Map<String, String> values = new HashMap<>();
            for (String line : info.split("\r?\n")) {
                int colon = line.indexOf(':');
                if (colon > 0 && !line.startsWith("#")) {
                    values.put(line.substring(0, colon), line.substring(colon + 1).trim());
                }
            }
            return values;
        }
    }

    static void print(List<Result> results, PrintStream out) {
        out.println();
        out.println("| case | cycles/s | Redis cmds/cycle | Redis CPU µs/cycle | client CPU µs/cycle | client alloc B/cycle "
                + "| net in+out B/cycle | JVM threads (redisson-*) |");
        out.println("|---|---:|---:|---:|---:|---:|---:|---:|");
        for (Result r : results) {
            if (r.cycles() == 0) {
                out.printf(Locale.ROOT, "| %s | failed | | | | | | |%n", r.c().label());
                continue;
            }
            out.printf(Locale.ROOT, "| %s | %.0f | %.1f | %.0f | %.0f | %.0f | %.0f | %d (%d) |%n", r.c().label(),
                    r.cyclesPerSecond(), r.commands(), r.redisCpuUs(), r.clientCpuUs(), r.allocBytes(),
                    r.netInBytes() + r.netOutBytes(), r.jvmThreads(), r.redissonThreads());
        }
        out.println();
        out.println("Commands per cycle by name (INFO commandstats; commands run inside a script are counted too):");
        out.println();
        for (Result r : results) {
            out.println("- " + r.c().label() + ": " + r.byCommand().entrySet().stream()
                    .map(e -> Double.isNaN(e.getValue()) ? e.getKey()
                            : String.format(Locale.ROOT, "%s %.2f", e.getKey(), e.getValue()))
                    .collect(Collectors.joining(", ")));
        }
    }
}

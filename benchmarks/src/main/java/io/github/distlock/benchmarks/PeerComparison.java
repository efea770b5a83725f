package io.github.distlock.benchmarks;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

import io.github.distlock.LockType;
import io.github.distlock.benchmarks.LockCycles.Impl;
import io.github.distlock.benchmarks.LockCycles.Lease;
import io.github.distlock.testsupport.RespClient;
import org.springframework.boot.logging.LogLevel;
import org.springframework.boot.logging.LoggingSystem;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.integration.redis.util.RedisLockRegistry;
import org.springframework.integration.redis.util.RedisLockRegistry.RedisLockType;

/**
 * distlock's Redis locks beside what a Spring user would pick instead: Spring Integration's {@code RedisLockRegistry}
 * (on Spring Data Redis over Lettuce, its two lock types), with raw Redisson's {@code RLock} as the anchor. One
 * {@code redis-server}, one application (whose Redisson client the {@code RLock} rows share) and one Lettuce connection
 * factory for the registries; the variants take turns in time slots whose order rotates per round, after one warm-up
 * slot each, so a burst of load on the shared machine hits each in turn and the ratio to {@code RLock} is taken per
 * round from neighbouring slots.
 *
 * <p>Two workloads: N threads on a key each (uncontended: the cost of a cycle), then M threads on one key (wait up to
 * 30 s; the hand-off). One registry serves all threads of an instance, and queues them on a JVM-local lock per key
 * before any asks Redis: on the one key it is measured that way and, as M instances would take it, with a registry
 * per thread. Every cycle waits up to 30 s and releases at once, with an empty body. Per variant: cycles/s and
 * the ratio to {@code RLock} per round, client CPU per cycle (this JVM's process CPU time: every thread), redis-server
 * CPU per cycle ({@code /proc/<pid>/stat}), Redis commands per cycle ({@code INFO commandstats}, the commands scripts
 * run included), p50/p99 of the cycle, cycles per thread min–max.
 *
 * <p>Two floors beside them: the smallest correct Redis lock ({@code SET NX PX} to take, a cached compare-and-delete
 * script to release; no renewal, no wake-up: waiting polls every millisecond) on Lettuce, and the same two commands on
 * the application's Redisson client — what any lock on that client can at best reach. {@code -Dpeers.variants=A,B}
 * runs only those rows (and {@code RLock}, the anchor).
 *
 * <p>Spring Integration 7.1 releases with {@code DELEX ... IFEQ} (Redis 8.4) where the server has it; on an older
 * server (embedded-redis ships 6.2) its first release of each lock fails over to a Lua compare-and-delete for good.
 * That happens in the warm-up slots: the measured slots run the fallback, one script per release.
 */
public final class PeerComparison {

    /** The rows. */
    enum Variant {
        ANNOTATION("`@DistributedLock` (watchdog)"),
        TEMPLATE_FIXED("`LockTemplate` (fixed lease)"),
        RLOCK("Redisson `RLock` (watchdog)"),
        FAIR("`LockTemplate` `FAIR` (watchdog)"),
        REGISTRY_PUB_SUB("`RedisLockRegistry` PUB_SUB"),
        REGISTRY_SPIN("`RedisLockRegistry` SPIN"),
        /**
         * A registry per thread, as N instances would have: one registry queues its own threads on a JVM-local lock
         * before any of them asks Redis, so on one key a single registry measures mostly that local lock.
         */
        REGISTRY_PUB_SUB_PER_THREAD("`RedisLockRegistry` PUB_SUB, a registry per thread", true),
        REGISTRY_SPIN_PER_THREAD("`RedisLockRegistry` SPIN, a registry per thread", true),
        /** {@code SET NX PX} + a cached compare-and-delete script on Lettuce: the protocol's floor. */
        RAW_LETTUCE("raw `SET NX PX` + compare-and-delete, Lettuce"),
        /** The same two commands on the application's Redisson client: what Redisson's client path costs. */
        RAW_REDISSON("raw `SET NX PX` + compare-and-delete, Redisson");

        final String label;
        /** Whether the variant runs on the one-key workload only (on own keys it is the shared registry's twin). */
        final boolean oneKeyOnly;

        Variant(String label) {
            this(label, false);
        }

        Variant(String label, boolean oneKeyOnly) {
            this.label = label;
            this.oneKeyOnly = oneKeyOnly;
        }
    }

    /** One acquire + release by worker {@code thread} of the lock for {@code id}; {@code true} when had. */
    @FunctionalInterface
    interface Cycle {
        boolean run(int thread, String id) throws InterruptedException;
    }

    /** The registries' lease ({@code expireAfter}): as long as distlock's fixed lease here. */
    static final long REGISTRY_EXPIRE_MS = LockCycles.FIXED_LEASE_MS;

    /**
     * One variant on one workload, over all measured rounds.
     *
     * @param vsRLockPerRound this variant's cycles/s over {@code RLock}'s, round by round
     * @param commandsByName the top Redis commands per cycle
     */
    record Result(String workload, Variant variant, long cycles, double cyclesPerSecond, double[] vsRLockPerRound,
            double vsRLock, double clientUsPerCycle, double redisUsPerCycle, double commandsPerCycle,
            String commandsByName, double p50Us, double p99Us, long minPerThread, long maxPerThread,
            String failures) {
    }

    private PeerComparison() {
    }

    /**
     * Usage: {@code PeerComparison [rounds] [seconds per slot] [threads on own keys,threads on one key]}; defaults
     * {@code 8 3 8,16}: 8 rounds of 3 s slots, about 6 minutes with the warm-up.
     */
    public static void main(String[] args) throws Exception {
        int rounds = (args.length > 0) ? Integer.parseInt(args[0]) : 8;
        double seconds = (args.length > 1) ? Double.parseDouble(args[1]) : 3;
        int[] threads = (args.length > 2) ? HandoffLatency.parseInts(args[2]) : new int[] {8, 16};
        if (threads.length != 2 || rounds < 1 || seconds <= 0) {
            throw new IllegalArgumentException("PeerComparison [rounds >= 1] [seconds per slot > 0] "
                    + "[threads on own keys,threads on one key], e.g. 8 3 8,16");
        }
        System.out.println("load average at start: " + Counters.loadAverage());
        List<Result> results = run(rounds, (long) (seconds * 1000), threads[0], threads[1]);
        print(results, System.out);
        System.out.println();
        System.out.println("load average at the end: " + Counters.loadAverage());
    }

    /** Starts Redis, the application and the registries, measures both workloads, and stops all of it. */
    static List<Result> run(int rounds, long slotMillis, int ownKeyThreads, int oneKeyThreads) throws Exception {
        try (BenchEnvironment env = BenchEnvironment.start(RedissonVariant.DEFAULT)) {
            // the registry first tries DELEX (Redis 8.4), which this redis-server lacks, and then falls back to its Lua
            // scripts for good, warning with a stack trace per lock: once per key, in the warm-up slots
            LoggingSystem.get(PeerComparison.class.getClassLoader()).setLogLevel(RedisLockRegistry.class.getName(),
                    LogLevel.ERROR);
            LettuceConnectionFactory lettuce = new LettuceConnectionFactory(
                    new RedisStandaloneConfiguration(env.server().host(), env.server().port()));
            lettuce.afterPropertiesSet();
            lettuce.start();
            List<RedisLockRegistry> registries = new ArrayList<>();
            try {
                RedisLockRegistry pubSub = registry(lettuce, "peer-pubsub", RedisLockType.PUB_SUB_LOCK, registries);
                RedisLockRegistry spin = registry(lettuce, "peer-spin", RedisLockType.SPIN_LOCK, registries);
                int most = Math.max(ownKeyThreads, oneKeyThreads);
                RedisLockRegistry[] pubSubPerThread = new RedisLockRegistry[most];
                RedisLockRegistry[] spinPerThread = new RedisLockRegistry[most];
                for (int t = 0; t < most; t++) {
                    // one registry key for all: the registries lock the same Redis keys, as instances would
                    pubSubPerThread[t] = registry(lettuce, "peer-pubsub-n", RedisLockType.PUB_SUB_LOCK, registries);
                    spinPerThread[t] = registry(lettuce, "peer-spin-n", RedisLockType.SPIN_LOCK, registries);
                }
                Cycle[] cycles = new Cycle[Variant.values().length];
                for (Variant variant : Variant.values()) {
                    cycles[variant.ordinal()] = switch (variant) {
                        case ANNOTATION -> ours(LockCycles.cycle(env, Impl.ANNOTATION, Lease.WATCHDOG, true));
                        case TEMPLATE_FIXED -> ours(LockCycles.cycle(env, Impl.TEMPLATE, Lease.FIXED, true));
                        case RLOCK -> ours(LockCycles.cycle(env, Impl.REDISSON, Lease.WATCHDOG, true));
                        case FAIR -> ours(LockCycles.cycle(env, Impl.TEMPLATE, Lease.WATCHDOG, true, LockType.FAIR));
                        case REGISTRY_PUB_SUB -> (t, id) -> registryCycle(pubSub, id);
                        case REGISTRY_SPIN -> (t, id) -> registryCycle(spin, id);
                        case REGISTRY_PUB_SUB_PER_THREAD -> (t, id) -> registryCycle(pubSubPerThread[t], id);
                        case REGISTRY_SPIN_PER_THREAD -> (t, id) -> registryCycle(spinPerThread[t], id);
                        case RAW_LETTUCE -> ours(LockCycles.cycle(env, Impl.RAW, Lease.FIXED, true));
                        case RAW_REDISSON -> redissonRaw(env.redisson());
                    };
                }
                Counters.RedisProcess redis = Counters.RedisProcess.of(env.server());
                List<Result> results = new ArrayList<>();
                results.addAll(measure(redis, cycles, ownKeyThreads + " threads, one key each", ownKeyThreads, false,
                        rounds, slotMillis));
                results.addAll(measure(redis, cycles, oneKeyThreads + " threads, one key", oneKeyThreads, true, rounds,
                        slotMillis));
                List<String> left = ((List<?>) RespClient.callOnce(env.server().port(), "KEYS", "*")).stream()
                        .map(String::valueOf)
                        // not lock state: the instance's announcement, and the FAIR key's close count (a waiter
                        // sets it with a TTL of twice the waiter entry's; it expires by itself)
                        .filter(key -> !key.startsWith("distlock:instance:") && !key.startsWith("distlock_closes:"))
                        .toList();
                if (!left.isEmpty()) {
                    throw new IllegalStateException("Lock keys left in Redis after the run: " + left);
                }
                return results;
            }
            finally {
                registries.forEach(RedisLockRegistry::destroy);
                lettuce.destroy();
            }
        }
    }

    private static RedisLockRegistry registry(LettuceConnectionFactory lettuce, String key, RedisLockType type,
            List<RedisLockRegistry> made) {
        RedisLockRegistry registry = new RedisLockRegistry(lettuce, key, REGISTRY_EXPIRE_MS);
        made.add(registry);
        registry.setRedisLockType(type);
        return registry;
    }

    private static Cycle redissonRaw(org.redisson.api.RedissonClient redisson) {
        org.redisson.api.RScript script = redisson.getScript(org.redisson.client.codec.StringCodec.INSTANCE);
        String release = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
        String sha = script.scriptLoad(release);
        java.time.Duration lease = java.time.Duration.ofMillis(LockCycles.FIXED_LEASE_MS);
        return (t, id) -> {
            String key = "bench:" + id;
            String token = RawLockClient.threadToken();
            org.redisson.api.RBucket<String> bucket = redisson.getBucket(key, org.redisson.client.codec.StringCodec.INSTANCE);
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(LockCycles.WAIT_MS);
            while (!bucket.setIfAbsent(token, lease)) {
                if (System.nanoTime() - deadline >= 0) {
                    return false;
                }
                java.util.concurrent.locks.LockSupport.parkNanos(RawLockClient.POLL_NANOS);
            }
            Long deleted = script.evalSha(org.redisson.api.RScript.Mode.READ_WRITE, sha,
                    org.redisson.api.RScript.ReturnType.LONG, List.of(key), token);
            return deleted != null && deleted == 1L;
        };
    }

    private static Cycle ours(LockCycles.Cycle cycle) {
        return (t, id) -> cycle.run(id);
    }

    /** {@code obtain(key)}, {@code tryLock(30 s)}, {@code unlock()}: the registry caches the lock per key. */
    private static boolean registryCycle(RedisLockRegistry registry, String id) throws InterruptedException {
        Lock lock = registry.obtain("bench:" + id);
        if (!lock.tryLock(LockCycles.WAIT_MS, TimeUnit.MILLISECONDS)) {
            return false;
        }
        lock.unlock();
        return true;
    }

    /** One workload: a warm-up slot per variant, then {@code rounds} rounds of a slot per variant, rotating. */
    private static List<Result> measure(Counters.RedisProcess redis, Cycle[] cycles, String workload,
            int threads, boolean oneKey, int rounds, long slotMillis) throws InterruptedException {
        String only = System.getProperty("peers.variants", "");
        Variant[] variants = Arrays.stream(Variant.values()).filter(v -> oneKey || !v.oneKeyOnly)
                .filter(v -> only.isEmpty() || v == Variant.RLOCK || Arrays.asList(only.split(",")).contains(v.name()))
                .toArray(Variant[]::new);
        Totals[] totals = new Totals[Variant.values().length];
        for (Variant variant : variants) {
            totals[variant.ordinal()] = new Totals(rounds, threads);
            slot(cycles, variant, threads, oneKey, Math.max(500, slotMillis / 2));
        }
        for (int r = 0; r < rounds; r++) {
            progress(workload + ", round " + (r + 1) + " of " + rounds + ", load average " + Counters.loadAverage());
            for (int k = 0; k < variants.length; k++) {
                Variant variant = variants[(r + k) % variants.length];
                Counters before = redis.take();
                Slot slot = slot(cycles, variant, threads, oneKey, slotMillis);
                Counters after = redis.take();
                totals[variant.ordinal()].add(r, slot.cycles(), slot.outcome(), before, after);
            }
        }
        Totals rlock = totals[Variant.RLOCK.ordinal()];
        List<Result> results = new ArrayList<>();
        for (Variant variant : variants) {
            Totals t = totals[variant.ordinal()];
            long n = t.cycles();
            Samples sorted = t.samples.sorted();
            double[] perRound = t.ratesPerRoundTo(rlock);
            results.add(new Result(workload, variant, n, t.rate(), perRound, t.rate() / rlock.rate(),
                    t.clientCpuNanos / 1e3 / n, t.serverCpuNanos / 1e3 / n, t.ops / (double) n,
                    Cells.top(t.opsPerCycleMostFirst()), sorted.percentile(50) / 1e3, sorted.percentile(99) / 1e3,
                    t.minPerThread(), t.maxPerThread(), t.failures.isEmpty() ? "0" : t.failures.toString()));
        }
        return results;
    }

    private record Slot(Slots.Cycles cycles, Slots.Outcome outcome) {
    }

    /** The variant's cycle on {@code threads} threads for {@code millis} ms, each on its own key or all on one. */
    private static Slot slot(Cycle[] cycles, Variant variant, int threads, boolean oneKey, long millis)
            throws InterruptedException {
        Cycle cycle = cycles[variant.ordinal()];
        Samples[] perThread = new Samples[threads];
        Slots.Outcome outcome = Slots.run(variant.label, "peer-comparison-", threads, millis, t -> {
            Samples mine = perThread[t] = new Samples();
            // a key per variant: FAIR and the registries keep other structures than RLock's hash under their names
            String id = "p" + variant.ordinal() + (oneKey ? ":hot" : ":t" + t);
            return () -> {
                long begin = System.nanoTime();
                boolean had = cycle.run(t, id);
                if (had) {
                    mine.add(System.nanoTime() - begin);
                }
                return had;
            };
        }, Slots::withMessage);
        Slots.Cycles merged = Slots.Cycles.of(perThread);
        if (merged.all().size() == 0) {
            throw new IllegalStateException(variant.label + ": no lock cycle succeeded; failures: "
                    + outcome.failures());
        }
        return new Slot(merged, outcome);
    }

    /** The table for docs/performance.md, then the commands by name. */
    static void print(List<Result> results, PrintStream out) {
        out.println();
        out.println("| workload | variant | cycles/s | vs RLock | per round | client µs/cycle | Redis µs/cycle | "
                + "Redis commands/cycle | p50 µs | p99 µs | per thread min–max | failed calls |");
        out.println("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|---|");
        for (Result r : results) {
            out.printf(Locale.ROOT, "| %s | %s | %.0f | %.2f | %s | %.0f | %.0f | %.1f | %.0f | %.0f | %d–%d | %s |%n",
                    r.workload(), r.variant().label, r.cyclesPerSecond(), r.vsRLock(),
                    Cells.ratios(r.vsRLockPerRound()), r.clientUsPerCycle(), r.redisUsPerCycle(),
                    r.commandsPerCycle(), r.p50Us(), r.p99Us(), r.minPerThread(), r.maxPerThread(), r.failures());
        }
        out.println();
        out.println(Cells.REDIS_COMMANDS_CAPTION);
        out.println();
        out.println("| workload | variant | commands per cycle |");
        out.println("|---|---|---|");
        for (Result r : results) {
            out.printf(Locale.ROOT, "| %s | %s | %s |%n", r.workload(), r.variant().label, r.commandsByName());
        }
        out.println();
        out.println("Reproduce: `java -cp benchmarks/target/distlock-benchmarks.jar " + PeerComparison.class.getName()
                + " <rounds> <seconds per slot> <threads on own keys>,<threads on one key>` (or `benchmarks/run.sh "
                + "full peers`)");
    }

    private static void progress(String what) {
        System.err.printf(Locale.ROOT, "[%tT] peer comparison: %s%n", System.currentTimeMillis(), what);
    }
}

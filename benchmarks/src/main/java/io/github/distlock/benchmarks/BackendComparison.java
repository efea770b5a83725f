package io.github.distlock.benchmarks;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import javax.sql.DataSource;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.GetOption;
import io.github.distlock.etcd.EtcdLockProvider;
import io.github.distlock.etcd.autoconfigure.DistlockEtcdProperties;
import io.github.distlock.jdbc.JdbcLockProvider;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.testsupport.EtcdServer;
import io.github.distlock.testsupport.RedisServer;
import io.github.distlock.testsupport.RespClient;
import io.github.distlock.zookeeper.ZooKeeperLockProvider;
import io.github.distlock.zookeeper.autoconfigure.DistlockZooKeeperProperties;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.TestingServer;
import org.apache.curator.utils.ZKPaths;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The {@code @DistributedLock} cycle on every backend side by side, in one run: one JVM starts a {@code redis-server},
 * an embedded PostgreSQL, a ZooKeeper server (Curator's {@code TestingServer}, in this JVM) and an {@code etcd}
 * process, and one application per {@link Backend}: {@code distlock.backend=redis}, {@code jdbc}, {@code zookeeper},
 * {@code etcd}. The database backend can run twice, on two databases of the one PostgreSQL server that differ only in
 * {@code synchronous_commit}: {@code on} (PostgreSQL's default: a commit waits for its WAL to reach the disk) and
 * {@code off} (the embedded server's default; like a Redis without persistence, a crash may lose the last
 * acknowledged lock changes); the second is not in the {@link #DEFAULT_BACKENDS default set}, to keep the run short.
 *
 * <p>The cycle: a {@code @DistributedLock} method (wait up to 30 s, watchdog lease) through the Spring proxy, whose
 * body checks mutual exclusion (a counter of holders per key, which must read 1) and, on the hot key, counts the
 * holders that took the lock again right after themselves ("self re-grabs") and times every hand-off: from the moment
 * the previous holder's body ended (its release starts right after) to the moment the next, other, holder's body
 * starts. That is where waking a waiter shows: Redis's pub/sub message, the database's polling with backoff,
 * ZooKeeper's watch on the predecessor node, etcd's watch on the predecessor key. Three workloads: 1 thread on a key of
 * its own, 8 threads on a key each, 8 threads on one hot key. A thread calls again as soon as its call returns.
 *
 * <p>As in {@link ClusterComparison}, the backends take turns in time slots, each at the workload's full thread count,
 * in an order that rotates per round, so a burst of load on the shared machine hits each in turn; the ratio to Redis is
 * computed per round from neighbouring slots. A waiter still waiting when its slot ends finishes its call (its time
 * counts, and so does the tail in the slot's length). Around each slot the harness reads the backend's operations
 * (Redis: {@code INFO commandstats}; PostgreSQL: {@code pg_stat_statements} of the application's database, which our
 * own monitoring queries are not in; ZooKeeper: the server's received packets, from {@code mntr}; etcd: gRPC messages
 * received, by method, from {@code /metrics}), the server's CPU time (Redis: {@code INFO cpu}; PostgreSQL: {@code /proc}
 * of the postmaster and all its processes; ZooKeeper: its server threads in this JVM; etcd: {@code /proc} of its
 * process) and the JVM's CPU time (the idle applications' timers included; ZooKeeper's server threads not).
 */
public final class BackendComparison {

    /** The applications; {@link #REDIS} first: the others are compared with it. */
    enum Backend {
        REDIS("Redis", null),
        POSTGRES("PostgreSQL, synchronous_commit on", "locks_sync"),
        POSTGRES_ASYNC("PostgreSQL, synchronous_commit off", "locks_async"),
        ZOOKEEPER("ZooKeeper", null),
        ETCD("etcd", null);

        final String label;
        /** The application's database on the PostgreSQL server; {@code null} for Redis. */
        final String database;

        Backend(String label, String database) {
            this.label = label;
            this.database = database;
        }
    }

    /** What a run measures unless told otherwise: every backend once, PostgreSQL with its own default commit. */
    static final Set<Backend> DEFAULT_BACKENDS = Collections.unmodifiableSet(
            EnumSet.of(Backend.REDIS, Backend.POSTGRES, Backend.ZOOKEEPER, Backend.ETCD));

    /** What the threads lock. */
    enum Workload {
        ONE_THREAD(1, false, "1 thread, own key"),
        DISTINCT(8, false, "8 threads, own keys"),
        HOT_KEY(8, true, "8 threads, one hot key");

        final int threads;
        final boolean hot;
        final String label;

        Workload(int threads, boolean hot, String label) {
            this.threads = threads;
            this.hot = hot;
            this.label = label;
        }
    }

    /** One backend's totals on one workload, over all measured rounds; times in µs. */
    record Result(Workload workload, Backend backend, long cycles, double cyclesPerSecond, double p50Us, double p99Us,
            double maxUs, long minPerThread, long maxPerThread, double selfRegrabShare, long handoffs,
            double handoffP50Us, double handoffP99Us, double[] vsRedisPerRound, double vsRedis, double p50VsRedis,
            double opsPerCycle, Map<String, Double> opsByName, double serverCpuUsPerCycle, double clientCpuUsPerCycle,
            long overlaps, Map<String, Long> failures) {
    }

    private BackendComparison() {
    }

    /**
     * Usage: {@code BackendComparison [rounds] [seconds per slot] [backends]}; defaults 4 rounds (a multiple of the 4
     * default backends, so that each runs in each position equally often) of 4 s slots: about 4 minutes with the
     * start-up. Backends: a comma-separated list of {@link Backend} names ({@code redis,postgres,postgres_async,...},
     * Redis always included) or {@code all}; default {@link #DEFAULT_BACKENDS}.
     */
    public static void main(String[] args) throws Exception {
        int rounds = (args.length > 0) ? Integer.parseInt(args[0]) : 4;
        int seconds = (args.length > 1) ? Integer.parseInt(args[1]) : 4;
        Set<Backend> backends = (args.length > 2) ? parseBackends(args[2]) : DEFAULT_BACKENDS;
        System.out.println("load average at start: " + Counters.loadAverage());
        print(run(backends, rounds, seconds * 1000L), System.out);
        System.out.println();
        System.out.println("load average at the end: " + Counters.loadAverage());
    }

    /** A run's results, and the locks still held in each store after its last slot (all 0 unless a release failed). */
    record Run(List<Result> results, Map<Backend, Long> heldAfterwards) {
    }

    /** {@code all}, or Backend names separated by commas, case ignored; Redis is added: it is the reference. */
    static Set<Backend> parseBackends(String names) {
        if (names.equalsIgnoreCase("all")) {
            return EnumSet.allOf(Backend.class);
        }
        Set<Backend> chosen = EnumSet.of(Backend.REDIS);
        for (String name : names.split(",")) {
            try {
                chosen.add(Backend.valueOf(name.trim().toUpperCase(Locale.ROOT)));
            }
            catch (IllegalArgumentException ex) {
                throw new IllegalArgumentException("Unknown backend '" + name.trim() + "': use all or some of "
                        + Arrays.stream(Backend.values()).map(b -> b.name().toLowerCase(Locale.ROOT))
                                .collect(Collectors.joining(",")), ex);
            }
        }
        return chosen;
    }

    /** Starts the servers and applications, measures, and stops all of it again, also when something fails. */
    static Run run(Set<Backend> backends, int rounds, long slotMillis) throws Exception {
        try (Setup setup = Setup.start(backends)) {
            List<Result> results = measure(setup, rounds, slotMillis, warmupMillis(slotMillis));
            return new Run(results, setup.heldLocks());
        }
    }

    /** Half a slot, at least 0.5 s: the JIT, the pools, Redisson's scripts, PostgreSQL's plans, sessions and leases. */
    private static long warmupMillis(long slotMillis) {
        return Math.max(500, slotMillis / 2);
    }

    /**
     * Measures on a running {@link Setup}: one discarded warm-up slot of {@code warmupMillis} per backend and workload,
     * then {@code rounds} rounds of one slot per workload and backend.
     */
    static List<Result> measure(Setup setup, int rounds, long slotMillis, long warmupMillis)
            throws InterruptedException {
        Workload[] workloads = Workload.values();
        int b = setup.targets.size();
        Totals.WithHandoffs[][] totals = new Totals.WithHandoffs[workloads.length][b];
        for (Workload workload : workloads) {
            for (int i = 0; i < b; i++) {
                totals[workload.ordinal()][i] = new Totals.WithHandoffs(rounds, workload.threads);
                slot(setup.targets.get(i), workload, warmupMillis);
            }
        }
        for (int r = 0; r < rounds; r++) {
            progress("round " + (r + 1) + " of " + rounds + ", load average " + Counters.loadAverage());
            for (Workload workload : workloads) {
                for (int k = 0; k < b; k++) {
                    // rotate the order so that no backend always runs first (after the previous workload) or last
                    int i = (r + k) % b;
                    Target target = setup.targets.get(i);
                    Counters before = counters(setup, target);
                    Slot slot = slot(target, workload, slotMillis);
                    Counters after = counters(setup, target);
                    Totals.WithHandoffs t = totals[workload.ordinal()][i];
                    t.add(r, slot.cycles(), slot.outcome(), before, after);
                    t.addHandoffs(slot.handoffs(), slot.selfRegrabs(), slot.overlaps());
                }
            }
        }
        List<Result> results = new ArrayList<>();
        for (Workload workload : workloads) {
            // Setup puts Redis first
            Totals.WithHandoffs redis = totals[workload.ordinal()][0];
            double redisP50 = redis.samples.sorted().percentile(50);
            for (int i = 0; i < b; i++) {
                Totals.WithHandoffs t = totals[workload.ordinal()][i];
                Samples sorted = t.samples.sorted();
                Samples handoffs = t.handoffs.sorted();
                long cycles = t.cycles();
                results.add(new Result(workload, setup.targets.get(i).backend, cycles, t.rate(),
                        sorted.percentile(50) / 1e3, sorted.percentile(99) / 1e3, sorted.percentile(100) / 1e3,
                        t.minPerThread(), t.maxPerThread(),
                        workload.hot ? t.selfRegrabs / (double) cycles : Double.NaN, handoffs.size(),
                        workload.hot ? handoffs.percentile(50) / 1e3 : Double.NaN,
                        workload.hot ? handoffs.percentile(99) / 1e3 : Double.NaN, t.ratesPerRoundTo(redis),
                        t.rate() / redis.rate(), sorted.percentile(50) / redisP50, t.ops / (double) cycles,
                        t.opsPerCycleByName(),
                        t.serverCpuNanos / 1e3 / cycles, t.clientCpuNanos / 1e3 / cycles, t.overlaps, t.failures));
            }
        }
        return results;
    }

    /** The workload's threads call the target's locked method for {@code millis} ms. */
    private static Slot slot(Target target, Workload workload, long millis) throws InterruptedException {
        int threads = workload.threads;
        Samples[] perThread = new Samples[threads];
        Samples[] handoffsPerThread = new Samples[threads];
        long[] selfRegrabs = new long[threads];
        // holders of each key right now: must never be more than one
        AtomicInteger[] holders = new AtomicInteger[workload.hot ? 1 : threads];
        Arrays.setAll(holders, k -> new AtomicInteger());
        LongAdder overlaps = new LongAdder();
        AtomicInteger lastHolder = new AtomicInteger(-1);
        // when the hot key's last holder finished its body, i.e. started releasing (the proxy releases right after)
        AtomicLong releaseStartedAt = new AtomicLong();
        Slots.Outcome outcome = Slots.run(target.backend.label, "backend-comparison-", threads, millis, t -> {
            Samples mine = perThread[t] = new Samples();
            Samples myHandoffs = handoffsPerThread[t] = new Samples();
            int self = t;
            AtomicInteger holdersOfMyKey = holders[workload.hot ? 0 : t];
            String id = target.id(workload.hot ? -1 : t);
            // the tiny body: an exclusion check and, on the hot key, who held the lock before and how long ago it let go.
            // Only a holder writes lastHolder and releaseStartedAt, and the lock orders the holders: the value read is
            // the previous holder's (were the lock broken, the overlap count would say so)
            Runnable body = () -> {
                long acquiredAt = System.nanoTime();
                if (holdersOfMyKey.incrementAndGet() != 1) {
                    overlaps.increment();
                }
                if (workload.hot) {
                    int previous = lastHolder.getAndSet(self);
                    if (previous == self) {
                        selfRegrabs[self]++;
                    }
                    else if (previous >= 0) {
                        myHandoffs.add(acquiredAt - releaseStartedAt.get());
                    }
                }
                holdersOfMyKey.decrementAndGet();
                if (workload.hot) {
                    releaseStartedAt.set(System.nanoTime());
                }
            };
            return () -> {
                long begin = System.nanoTime();
                target.service.waitWatchdogRun(id, body);
                mine.add(System.nanoTime() - begin);
                return true;
            };
        }, Slots::causeChain);
        Slots.Cycles cycles = Slots.Cycles.of(perThread);
        if (cycles.all().size() == 0) {
            throw new IllegalStateException(target.backend.label + ": no lock cycle succeeded (" + workload.label
                    + "); failures: " + outcome.failures());
        }
        return new Slot(cycles, Slots.merge(handoffsPerThread), Arrays.stream(selfRegrabs).sum(), overlaps.sum(),
                outcome);
    }

    /** Prints the run's tables and the locks it left held. */
    static void print(Run run, PrintStream out) {
        print(run.results(), out);
        out.println();
        out.println("Locks still held after the run (rows with an owner, Redis lock keys, ZooKeeper lock nodes, etcd "
                + "keys under the namespace): " + run.heldAfterwards());
    }

    /** Prints the table (every backend on every workload, with its ratios to Redis) and the operations by name. */
    static void print(List<Result> results, PrintStream out) {
        out.println();
        out.println("| workload | backend | cycles/s | p50 µs | p99 µs | max µs | cycles/s vs Redis | per round | "
                + "p50 vs Redis | per thread min–max | self re-grabs | hand-offs | hand-off p50 µs | hand-off p99 µs | "
                + "ops/cycle | server CPU µs/cycle | client CPU µs/cycle | overlaps | failed calls |");
        out.println("|---|---|---:|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
        for (Result r : results) {
            String perRound = Cells.ratios(r.vsRedisPerRound());
            out.printf(Locale.ROOT,
                    "| %s | %s | %.0f | %.0f | %.0f | %.0f | %.2f | %s | %.2f | %d–%d | %s | %s | %s | %s | %.2f | %.0f "
                            + "| %.0f | %d | %s |%n",
                    r.workload().label, r.backend().label, r.cyclesPerSecond(), r.p50Us(), r.p99Us(), r.maxUs(),
                    r.vsRedis(), perRound, r.p50VsRedis(), r.minPerThread(), r.maxPerThread(),
                    Double.isNaN(r.selfRegrabShare()) ? "" : String.format(Locale.ROOT, "%.0f %%",
                            r.selfRegrabShare() * 100),
                    r.workload().hot ? Long.toString(r.handoffs()) : "",
                    Double.isNaN(r.handoffP50Us()) ? "" : String.format(Locale.ROOT, "%.0f", r.handoffP50Us()),
                    Double.isNaN(r.handoffP99Us()) ? "" : String.format(Locale.ROOT, "%.0f", r.handoffP99Us()),
                    r.opsPerCycle(), r.serverCpuUsPerCycle(), r.clientCpuUsPerCycle(), r.overlaps(),
                    r.failures().isEmpty() ? "0" : r.failures().toString());
        }
        out.println();
        out.println("Operations per cycle by name (Redis: INFO commandstats, commands inside scripts included, our INFO "
                + "calls not; PostgreSQL: pg_stat_statements calls in the application's database, statements cut "
                + "short; ZooKeeper: packets the server received (requests and pings), from mntr; etcd: gRPC messages "
                + "received by method, from /metrics, a stream's messages each counted):");
        out.println();
        out.println("| workload | backend | operations per cycle |");
        out.println("|---|---|---|");
        for (Result r : results) {
            String names = Cells.perCycle(r.opsByName(), "%s: %.2f", "; ");
            out.printf(Locale.ROOT, "| %s | %s | %s |%n", r.workload().label, r.backend().label, names);
        }
    }

    private static void progress(String what) {
        System.err.printf(Locale.ROOT, "[%tT] backend comparison: %s%n", System.currentTimeMillis(), what);
    }

    /**
     * One slot: cycle times (successful cycles only), the hot key's hand-off times, cycles per thread, the hot key's
     * self re-grabs, failures.
     */
    private record Slot(Slots.Cycles cycles, Samples handoffs, long selfRegrabs, long overlaps,
            Slots.Outcome outcome) {
    }

    /** One backend's application. */
    static final class Target {

        final Backend backend;
        final ConfigurableApplicationContext context;
        final LockedService service;

        Target(Backend backend, ConfigurableApplicationContext context) {
            this.backend = backend;
            this.context = context;
            this.service = context.getBean(LockedService.class);
        }

        /** Thread {@code t}'s id, or the hot key's for {@code t < 0}; the key is {@code lock:bench:<id>}. */
        String id(int t) {
            return "b" + backend.ordinal() + ((t < 0) ? ":hot" : ":t" + t);
        }
    }

    /**
     * The servers and applications of one run, started together before the first slot and stopped together after the
     * last (or when anything fails): a {@code redis-server}, and as the backends chosen need them an embedded
     * PostgreSQL with {@code pg_stat_statements}, a ZooKeeper {@code TestingServer} and an etcd process; one application
     * per {@link Backend}.
     */
    static final class Setup implements AutoCloseable {

        /** The names of ZooKeeper's server threads (in this JVM): their CPU time is the server's. */
        private static final Pattern ZOOKEEPER_SERVER_THREAD = Pattern.compile(
                "^(NIOServerCxnFactory|NIOWorkerThread|SyncThread|ProcessThread|CommitProc|SessionTracker|"
                        + "RequestThrottler|FinalRequestProcessor|PrepRequestProcessor)");

        /** Redis first. */
        final List<Target> targets;
        final RedisServer redis;
        /** A connection to the server's {@code postgres} database: the monitoring queries run there; or null. */
        private final Connection monitor;
        private final long postmasterPid;
        private final TestingServer zookeeper;
        private final EtcdServer etcd;
        private final long etcdPid;
        private final long clockTicksPerSecond;
        private final List<AutoCloseable> opened;

        private Setup(List<Target> targets, RedisServer redis, Connection monitor, long postmasterPid,
                TestingServer zookeeper, EtcdServer etcd, long etcdPid, List<AutoCloseable> opened) {
            this.targets = List.copyOf(targets);
            this.redis = redis;
            this.monitor = monitor;
            this.postmasterPid = postmasterPid;
            this.zookeeper = zookeeper;
            this.etcd = etcd;
            this.etcdPid = etcdPid;
            this.clockTicksPerSecond = Counters.clockTicksPerSecond();
            this.opened = opened;
        }

        /** Starts the {@link #DEFAULT_BACKENDS}. */
        static Setup start() {
            return start(DEFAULT_BACKENDS);
        }

        /** Starts Redis and the chosen backends, in the order of {@link Backend}. */
        static Setup start(Set<Backend> chosen) {
            Set<Backend> backends = EnumSet.of(Backend.REDIS);
            backends.addAll(chosen);
            List<AutoCloseable> opened = new ArrayList<>();
            try {
                long begin = System.nanoTime();
                RedisServer redis = RedisServer.start();
                opened.add(redis);
                List<Target> targets = new ArrayList<>();
                // the Redis application first: its start sets the log level to WARN before the other servers log theirs
                ConfigurableApplicationContext redisApp = BenchApplication.start(RedissonVariant.DEFAULT,
                        "distlock.backend=redis", "spring.data.redis.host=127.0.0.1",
                        "spring.data.redis.port=" + redis.port());
                opened.add(redisApp);
                targets.add(new Target(Backend.REDIS, redisApp));
                progress(String.format(Locale.ROOT, "Redis and its application up in %.1f s",
                        (System.nanoTime() - begin) / 1e9));
                Connection monitor = null;
                long postmaster = -1;
                List<Backend> databases = backends.stream().filter(b -> b.database != null).toList();
                if (!databases.isEmpty()) {
                    EmbeddedPostgres postgres = EmbeddedPostgres.builder().setPort(0)
                            .setServerConfig("shared_preload_libraries", "pg_stat_statements")
                            // PostgreSQL's own default; the embedded server turns it off unless told
                            .setServerConfig("synchronous_commit", "on")
                            .start();
                    opened.add(postgres);
                    monitor = DriverManager.getConnection(postgres.getJdbcUrl("postgres", "postgres"));
                    opened.add(monitor);
                    try (Statement statement = monitor.createStatement()) {
                        statement.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
                        for (Backend backend : databases) {
                            statement.execute("CREATE DATABASE " + backend.database);
                        }
                        if (databases.contains(Backend.POSTGRES_ASYNC)) {
                            statement.execute("ALTER DATABASE " + Backend.POSTGRES_ASYNC.database
                                    + " SET synchronous_commit = off");
                        }
                        try (ResultSet rows = statement.executeQuery("SELECT pg_backend_pid()")) {
                            rows.next();
                            postmaster = ProcessHandle.of(rows.getLong(1)).flatMap(ProcessHandle::parent)
                                    .orElseThrow(() -> new IllegalStateException("PostgreSQL's postmaster not found"))
                                    .pid();
                        }
                    }
                    progress(String.format(Locale.ROOT, "PostgreSQL up on port %d at %.1f s", postgres.getPort(),
                            (System.nanoTime() - begin) / 1e9));
                    for (Backend backend : databases) {
                        ConfigurableApplicationContext app = BenchApplication.start(RedissonVariant.DEFAULT,
                                "distlock.backend=jdbc",
                                "spring.datasource.url=" + postgres.getJdbcUrl("postgres", backend.database),
                                "spring.datasource.hikari.pool-name=" + backend.database,
                                // the database is no embedded one for Boot: create the lock table anyway
                                "distlock.jdbc.initialize-schema=always");
                        opened.add(app);
                        checkSynchronousCommit(app, backend == Backend.POSTGRES ? "on" : "off");
                        targets.add(new Target(backend, app));
                    }
                }
                TestingServer zookeeper = null;
                if (backends.contains(Backend.ZOOKEEPER)) {
                    // mntr is how the harness reads the server's packet count; 4-letter words are off unless listed
                    System.setProperty("zookeeper.4lw.commands.whitelist", "mntr");
                    zookeeper = new TestingServer(true);
                    opened.add(zookeeper);
                    ConfigurableApplicationContext app = BenchApplication.start(RedissonVariant.DEFAULT,
                            "distlock.backend=zookeeper",
                            "distlock.zookeeper.connect-string=" + zookeeper.getConnectString());
                    opened.add(app);
                    targets.add(new Target(Backend.ZOOKEEPER, app));
                    progress(String.format(Locale.ROOT, "ZooKeeper up on %s at %.1f s", zookeeper.getConnectString(),
                            (System.nanoTime() - begin) / 1e9));
                }
                EtcdServer etcd = null;
                long etcdPid = -1;
                if (backends.contains(Backend.ETCD)) {
                    Set<Long> children = ProcessHandle.current().children().map(ProcessHandle::pid)
                            .collect(Collectors.toSet());
                    etcd = EtcdServer.start();
                    opened.add(etcd);
                    // the one child process that was not there before: its /proc gives the server's CPU time
                    List<Long> started = ProcessHandle.current().children().map(ProcessHandle::pid)
                            .filter(pid -> !children.contains(pid)).toList();
                    if (started.size() != 1) {
                        throw new IllegalStateException("Cannot tell etcd's process among " + started);
                    }
                    etcdPid = started.get(0);
                    ConfigurableApplicationContext app = BenchApplication.start(RedissonVariant.DEFAULT,
                            "distlock.backend=etcd", "distlock.etcd.endpoints=" + etcd.endpoint());
                    opened.add(app);
                    targets.add(new Target(Backend.ETCD, app));
                    progress(String.format(Locale.ROOT, "etcd up on %s (pid %d) at %.1f s", etcd.endpoint(), etcdPid,
                            (System.nanoTime() - begin) / 1e9));
                }
                checkProviders(targets);
                progress(String.format(Locale.ROOT, "servers and applications up in %.1f s",
                        (System.nanoTime() - begin) / 1e9));
                return new Setup(targets, redis, monitor, postmaster, zookeeper, etcd, etcdPid, opened);
            }
            catch (Exception ex) {
                IllegalStateException failure = new IllegalStateException("Could not start the backends", ex);
                closeAll(opened, failure);
                throw failure;
            }
            catch (Error ex) {
                closeAll(opened, ex);
                throw ex;
            }
        }

        /** A misconfigured application would measure the wrong backend without a word: refuse to start instead. */
        private static void checkProviders(List<Target> targets) {
            for (Target target : targets) {
                LockProvider provider = target.context.getBean(LockProvider.class);
                Class<?> expected = switch (target.backend) {
                    case REDIS -> RedissonLockProvider.class;
                    case POSTGRES, POSTGRES_ASYNC -> JdbcLockProvider.class;
                    case ZOOKEEPER -> ZooKeeperLockProvider.class;
                    case ETCD -> EtcdLockProvider.class;
                };
                if (!expected.isInstance(provider)) {
                    throw new IllegalStateException(target.backend.label + " runs on " + provider + ", not a "
                            + expected.getSimpleName());
                }
            }
        }

        private static void checkSynchronousCommit(ConfigurableApplicationContext app, String expected)
                throws SQLException {
            try (Connection connection = app.getBean(DataSource.class).getConnection();
                    Statement statement = connection.createStatement();
                    ResultSet rows = statement.executeQuery("SHOW synchronous_commit")) {
                rows.next();
                if (!rows.getString(1).equals(expected)) {
                    throw new IllegalStateException("synchronous_commit is " + rows.getString(1) + " on "
                            + connection.getMetaData().getURL() + ", expected " + expected);
                }
            }
        }

        /**
         * Locks held right now, per backend: lock keys in Redis, rows with an owner in each database's lock table, lock
         * nodes (children of the keys' nodes under the base path) in ZooKeeper, keys under the namespace in etcd.
         */
        Map<Backend, Long> heldLocks() throws Exception {
            Map<Backend, Long> held = new LinkedHashMap<>();
            for (Target target : targets) {
                held.put(target.backend, switch (target.backend) {
                    case REDIS -> (long) ((List<?>) RespClient.callOnce(redis.port(), "KEYS",
                            LockCycles.PREFIX + "bench:*")).size();
                    case POSTGRES, POSTGRES_ASYNC -> heldRows(target);
                    case ZOOKEEPER -> lockNodes(target);
                    case ETCD -> etcdKeys(target);
                });
            }
            return held;
        }

        private static long heldRows(Target target) throws SQLException {
            JdbcLockProvider provider = (JdbcLockProvider) target.context.getBean(LockProvider.class);
            try (Connection connection = target.context.getBean(DataSource.class).getConnection();
                    Statement statement = connection.createStatement();
                    ResultSet rows = statement.executeQuery("SELECT count(*) FROM " + provider.tableName()
                            + " WHERE owner IS NOT NULL")) {
                rows.next();
                return rows.getLong(1);
            }
        }

        /** Children of every key's node: the key nodes are containers, which ZooKeeper removes later when empty. */
        private static long lockNodes(Target target) throws Exception {
            CuratorFramework client = ((ZooKeeperLockProvider) target.context.getBean(LockProvider.class)).getClient();
            String basePath = target.context.getBean(DistlockZooKeeperProperties.class).getBasePath();
            if (client.checkExists().forPath(basePath) == null) {
                return 0;
            }
            long nodes = 0;
            for (String key : client.getChildren().forPath(basePath)) {
                nodes += client.getChildren().forPath(ZKPaths.makePath(basePath, key)).size();
            }
            return nodes;
        }

        /**
         * The lock entries under the namespace, in one read: not the instances' announcements nor closed keys' marks
         * beside them (an announcement is written in the background, so two counts could see it once only).
         */
        private static long etcdKeys(Target target) throws Exception {
            Client client = ((EtcdLockProvider) target.context.getBean(LockProvider.class)).getClient();
            String namespace = target.context.getBean(DistlockEtcdProperties.class).getNamespace();
            return client.getKVClient().get(ByteSequence.from(namespace, StandardCharsets.UTF_8),
                    GetOption.builder().isPrefix(true).withKeysOnly(true).build()).get(10, TimeUnit.SECONDS)
                    .getKvs().stream().map(kv -> kv.getKey().toString(StandardCharsets.UTF_8))
                    .filter(key -> !key.startsWith(namespace + "%instances/") && !key.startsWith(namespace + "%closed/"))
                    .count();
        }

        /** ZooKeeper's counters from its {@code mntr} command: {@code zk_packets_received} and the like. */
        Map<String, Long> zooKeeperCounters() {
            try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), zookeeper.getPort())) {
                socket.setSoTimeout(10_000);
                socket.getOutputStream().write("mntr".getBytes(StandardCharsets.US_ASCII));
                socket.getOutputStream().flush();
                String out = new String(socket.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                Map<String, Long> counters = new HashMap<>();
                for (String line : out.split("\\r?\\n")) {
                    String[] parts = line.split("\\t");
                    if (parts.length == 2 && parts[1].matches("\\d+")) {
                        counters.put(parts[0], Long.parseLong(parts[1]));
                    }
                }
                if (!counters.containsKey("zk_packets_received")) {
                    throw new IllegalStateException("ZooKeeper's mntr gave no zk_packets_received: " + out);
                }
                return counters;
            }
            catch (IOException ex) {
                throw new IllegalStateException("Could not read ZooKeeper's mntr", ex);
            }
        }

        /** The gRPC messages etcd has received, by method (a unary call is one, a stream counts each message). */
        Map<String, Long> etcdMessages() {
            Map<String, Long> byMethod = new HashMap<>();
            try {
                HttpURLConnection connection = (HttpURLConnection) URI.create(etcd.endpoint() + "/metrics").toURL()
                        .openConnection();
                connection.setConnectTimeout(5_000);
                connection.setReadTimeout(10_000);
                try {
                    String text = new String(connection.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                    for (String line : text.split("\n")) {
                        // grpc_server_msg_received_total{grpc_method="Txn",grpc_service="etcdserverpb.KV",...} 42
                        if (line.startsWith("grpc_server_msg_received_total{")
                                && !line.contains("grpc_service=\"grpc.health")) {
                            int from = line.indexOf("grpc_method=\"") + 13;
                            String method = line.substring(from, line.indexOf('"', from));
                            long count = (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                            byMethod.merge(method, count, Long::sum);
                        }
                    }
                }
                finally {
                    connection.disconnect();
                }
            }
            catch (IOException ex) {
                throw new IllegalStateException("Could not read etcd's metrics", ex);
            }
            if (byMethod.isEmpty()) {
                throw new IllegalStateException("etcd's /metrics has no grpc_server_msg_received_total");
            }
            return byMethod;
        }

        /** CPU time of ZooKeeper's server threads, which run in this JVM; 0 without a ZooKeeper server. */
        static long zooKeeperServerCpuNanos() {
            ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            long nanos = 0;
            for (ThreadInfo info : threads.getThreadInfo(threads.getAllThreadIds(), 0)) {
                if (info != null && ZOOKEEPER_SERVER_THREAD.matcher(info.getThreadName()).find()) {
                    nanos += Math.max(0, threads.getThreadCpuTime(info.getThreadId()));
                }
            }
            return nanos;
        }

        /** CPU time of the etcd process. */
        long etcdCpuNanos() {
            long[] times = Counters.procTimes(etcdPid);
            return (times[0] + times[1]) * 1_000_000_000L / clockTicksPerSecond;
        }

        /** Statements run so far in {@code database}, by statement; our own queries run elsewhere. */
        Map<String, Long> statements(String database) {
            Map<String, Long> byName = new HashMap<>();
            try (PreparedStatement statement = monitor.prepareStatement("SELECT s.query, s.calls FROM "
                    + "pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = ?")) {
                statement.setString(1, database);
                try (ResultSet rows = statement.executeQuery()) {
                    while (rows.next()) {
                        byName.merge(shortQuery(rows.getString(1)), rows.getLong(2), Long::sum);
                    }
                }
            }
            catch (SQLException ex) {
                throw new IllegalStateException("Could not read pg_stat_statements", ex);
            }
            return byName;
        }

        /**
         * CPU time of the PostgreSQL server: the postmaster and every process it runs (a backend per pooled
         * connection, the WAL writer, ...), plus what its exited children used ({@code cutime}, {@code cstime}).
         */
        long postgresCpuNanos() {
            long ticks = 0;
            List<Long> pids = Stream.concat(Stream.of(postmasterPid), ProcessHandle.of(postmasterPid).stream()
                    .flatMap(ProcessHandle::descendants).map(ProcessHandle::pid)).toList();
            for (long pid : pids) {
                long[] times = Counters.procTimes(pid);
                ticks += times[0] + times[1];
                if (pid == postmasterPid) {
                    ticks += times[2] + times[3];
                }
            }
            return ticks * 1_000_000_000L / clockTicksPerSecond;
        }

        /** Applications first, then the servers: the reverse of the start. */
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

    /** A statement as pg_stat_statements normalises it, whitespace folded and cut short for the table. */
    static String shortQuery(String query) {
        String folded = query.replaceAll("\\s+", " ").trim();
        return (folded.length() <= 48) ? folded : folded.substring(0, 47) + "…";
    }

    /** A backend's operations and server CPU time at one moment, and the JVM's CPU time. */
    private static Counters counters(Setup setup, Target target) {
        Map<String, Long> byName = new HashMap<>();
        long serverCpu;
        if (target.backend == Backend.REDIS) {
            Counters.addRedisCommands(setup.redis.port(), byName);
            serverCpu = (long) (Counters.redisCpuSeconds(setup.redis.port()) * 1e9);
        }
        else if (target.backend == Backend.ZOOKEEPER) {
            byName.put("packets received", setup.zooKeeperCounters().get("zk_packets_received"));
            serverCpu = Setup.zooKeeperServerCpuNanos();
        }
        else if (target.backend == Backend.ETCD) {
            byName.putAll(setup.etcdMessages());
            serverCpu = setup.etcdCpuNanos();
        }
        else {
            byName.putAll(setup.statements(target.backend.database));
            serverCpu = setup.postgresCpuNanos();
        }
        // the JVM's time without ZooKeeper's server threads, which are the ZooKeeper server's
        return new Counters(byName, serverCpu, Counters.jvmCpuNanos() - Setup.zooKeeperServerCpuNanos());
    }
}

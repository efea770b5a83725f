package io.github.distlock.benchmarks;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.GetOption;
import io.github.distlock.HeldLock;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.etcd.autoconfigure.DistlockEtcdProperties;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.testsupport.EtcdServer;
import io.github.distlock.testsupport.RedisServer;
import io.github.distlock.testsupport.RespClient;
import io.github.distlock.zookeeper.autoconfigure.DistlockZooKeeperProperties;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.test.TestingServer;
import org.redisson.api.RedissonClient;
import org.springframework.boot.logging.LogLevel;
import org.springframework.boot.logging.LoggingSystem;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * How many watchdog locks one instance can hold, and what holding them costs: for each {@link Variant}, one client
 * process takes 10^3 locks on distinct keys, holds them for a measuring window, then grows to the next size (10^4,
 * 5 × 10^4, 10^5 by default) and measures again, and finally releases everything. Before the first lock, a window
 * with none held gives the idle application's cost. A window starts one watchdog timeout
 * (at most 5 s) after the last acquisition of its size, so that the burst's own renewals and the JIT compiling the
 * acquisition path are not counted as holding.
 *
 * <p>The client runs in a child JVM this harness starts per variant, so that its CPU time (the JVM's process CPU time)
 * is the client's alone; the server runs in this JVM or in a process of its own: {@code redis-server}, an embedded
 * PostgreSQL (the postmaster and every process under it), ZooKeeper's {@code TestingServer} (its server threads in this
 * JVM) and an {@code etcd} process, each read from {@code /proc} or the thread CPU time around the window.
 *
 * <p>Lost locks are counted twice, independently: the loss reports the client received ({@link HeldLock#whenLost}; raw
 * Redisson has none), and, at the end of each window, the locks the server still has: Redis keys that are a hash with
 * one owner field and a TTL (counted by a script over the key range, a few thousand keys per call), PostgreSQL rows
 * with an owner and an expiry in the future, ZooKeeper lock nodes (every node under the base path minus the key
 * nodes), etcd keys under the namespace (minus the instances' announcements and closed keys' marks). A window whose
 * server count is short of the size shows the loss even when no report came.
 *
 * <p>distlock's variants hold their locks through {@link LockTemplate#acquireAsync}: the path of an application that
 * holds a lock per session, job or device (a blocking {@code @DistributedLock} method would need a thread per held
 * lock). The {@code redisson} variant takes {@code RLock.lockAsync(owner)} on the same application's client (the same
 * Redisson config and watchdog timeout), renewed by Redisson's watchdog alone.
 */
public final class HeldLocks {

    /** Who holds the locks. */
    enum Variant {
        DISTLOCK_REDIS("distlock-redis"),
        REDISSON("redisson"),
        DISTLOCK_JDBC("distlock-jdbc"),
        DISTLOCK_ZOOKEEPER("distlock-zookeeper"),
        DISTLOCK_ETCD("distlock-etcd");

        final String label;

        Variant(String label) {
            this.label = label;
        }

        static Variant of(String label) {
            for (Variant variant : values()) {
                if (variant.label.equalsIgnoreCase(label.trim())) {
                    return variant;
                }
            }
            throw new IllegalArgumentException("Unknown variant '" + label.trim() + "': use all or some of "
                    + Arrays.stream(values()).map(v -> v.label).collect(Collectors.joining(",")));
        }
    }

    /** The longest window with no lock held: the idle application's cost is steady. */
    static final long IDLE_WINDOW_MILLIS = 10_000;

    /** The key of lock {@code i} is {@code held:<i>}, with the backend's prefix in front. */
    static final String KEY = "held:";

    /**
     * One measuring window.
     *
     * @param acquisitionSeconds how long taking the locks added for this size took
     * @param acquireFailures acquisitions that failed or were not granted, this size and the smaller ones
     * @param lossReports loss reports received so far, in this client process
     * @param onServer the locks the server has at the end of the window
     * @param firstLoss the first loss report's text, or empty
     */
    record Row(Variant variant, long watchdogMillis, int size, double acquisitionSeconds, long acquireFailures,
            double clientCores, double serverCores, double clientUsPerLockSecond, double serverUsPerLockSecond,
            long lossReports, long onServer, String firstLoss) {

        /** Locks the server no longer has. */
        long missing() {
            return size - acquireFailures - onServer;
        }
    }

    /** The release after the largest size: how long it took and what the server has left (must be 0). */
    record Release(Variant variant, long watchdogMillis, int held, double seconds, long failures, long leftOnServer) {
    }

    /** A run: the windows and the releases. */
    record Run(List<Row> rows, List<Release> releases) {
    }

    /**
     * What to run.
     *
     * @param sizes the lock counts, growing
     * @param windowMillis each window's length
     * @param watchdogMillis {@code distlock.watchdog-timeout} (and so Redisson's lock watchdog timeout)
     * @param longWatchdogMillis a second watchdog at which the Redis variants hold the largest size only; 0: none
     * @param inFlight acquisitions (and releases) in flight at once
     */
    record Settings(int[] sizes, long windowMillis, long watchdogMillis, long longWatchdogMillis, int inFlight) {

        Settings {
            if (sizes.length == 0) {
                throw new IllegalArgumentException("HeldLocks: give at least one size");
            }
            for (int i = 0; i < sizes.length; i++) {
                if (sizes[i] < 1 || (i > 0 && sizes[i] <= sizes[i - 1])) {
                    throw new IllegalArgumentException("HeldLocks: sizes must be positive and growing, were "
                            + Arrays.toString(sizes));
                }
            }
            if (windowMillis < 100 || watchdogMillis < 1000 || (longWatchdogMillis != 0 && longWatchdogMillis < 1000)
                    || inFlight < 1) {
                throw new IllegalArgumentException("HeldLocks: window at least 0.1 s, watchdogs at least 1 s (the long "
                        + "one 0 for none), in flight at least 1; were " + windowMillis + " ms, " + watchdogMillis
                        + " ms, " + longWatchdogMillis + " ms, " + inFlight);
            }
        }
    }

    private HeldLocks() {
    }

    /**
     * Usage: {@code HeldLocks [sizes] [window seconds] [watchdog seconds] [variants] [long watchdog seconds]};
     * defaults {@code 1000,10000,50000,100000 30 3 all 30}: five variants, four windows each, and the two Redis variants
     * again at the largest size with a 30 s watchdog (0 leaves that out). Variants: {@code all} or a comma-separated
     * list of {@code distlock-redis,redisson,distlock-jdbc,distlock-zookeeper,distlock-etcd}.
     * {@code -Dbench.held.in-flight=256} bounds the acquisitions in flight, {@code -Dbench.held.child-heap=1g} the
     * client JVM's heap.
     */
    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--child")) {
            ChildClient.main(Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        int[] sizes = (args.length > 0) ? HandoffLatency.parseInts(args[0]) : new int[] {1_000, 10_000, 50_000, 100_000};
        double window = (args.length > 1) ? Double.parseDouble(args[1]) : 30;
        double watchdog = (args.length > 2) ? Double.parseDouble(args[2]) : 3;
        List<Variant> variants = (args.length > 3) ? parseVariants(args[3]) : List.of(Variant.values());
        double longWatchdog = (args.length > 4) ? Double.parseDouble(args[4]) : 30;
        // the servers started in this JVM (ZooKeeper's, PostgreSQL's starter) log at INFO to the table's stream
        LoggingSystem.get(HeldLocks.class.getClassLoader()).setLogLevel(LoggingSystem.ROOT_LOGGER_NAME, LogLevel.WARN);
        Settings settings = new Settings(sizes, (long) (window * 1000), (long) (watchdog * 1000),
                (long) (longWatchdog * 1000), Integer.getInteger("bench.held.in-flight", 256));
        System.out.println("load average at start: " + Counters.loadAverage());
        Run run = run(variants, settings);
        print(run, settings, System.out);
        System.out.println();
        System.out.println("load average at the end: " + Counters.loadAverage());
        if (run.rows().stream().anyMatch(r -> r.lossReports() > 0 || r.missing() != 0 || r.acquireFailures() > 0)
                || run.releases().stream().anyMatch(r -> r.leftOnServer() != 0)) {
            System.out.println("LOCKS LOST, NOT ACQUIRED OR LEFT BEHIND: see the table");
        }
    }

    static List<Variant> parseVariants(String names) {
        if (names.equalsIgnoreCase("all")) {
            return List.of(Variant.values());
        }
        return Arrays.stream(names.split(",")).map(Variant::of).distinct().toList();
    }

    /** Every variant at every size, then the Redis variants at the long watchdog and the largest size. */
    static Run run(List<Variant> variants, Settings settings) throws Exception {
        List<Row> rows = new ArrayList<>();
        List<Release> releases = new ArrayList<>();
        for (Variant variant : variants) {
            runVariant(variant, settings.sizes(), settings.watchdogMillis(), settings, rows, releases);
        }
        if (settings.longWatchdogMillis() > 0) {
            int largest = settings.sizes()[settings.sizes().length - 1];
            for (Variant variant : variants) {
                if (variant == Variant.DISTLOCK_REDIS || variant == Variant.REDISSON) {
                    runVariant(variant, new int[] {largest}, settings.longWatchdogMillis(), settings, rows, releases);
                }
            }
        }
        return new Run(rows, releases);
    }

    /** Starts the variant's server and its client JVM, and measures each size in turn. */
    private static void runVariant(Variant variant, int[] sizes, long watchdogMillis, Settings settings,
            List<Row> rows, List<Release> releases) throws Exception {
        progress(variant.label + ", watchdog " + watchdogMillis + " ms: starting the server");
        // size 0 first: the idle application's own cost (timers, pings, the lease monitor's empty rounds)
        int[] measured = IntStream.concat(IntStream.of(0), Arrays.stream(sizes)).toArray();
        try (Server server = Server.start(variant)) {
            List<String> command = new ArrayList<>(List.of(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xms" + System.getProperty("bench.held.child-heap", "1g"),
                    "-Xmx" + System.getProperty("bench.held.child-heap", "1g"),
                    "-cp", System.getProperty("java.class.path"),
                    HeldLocks.class.getName(), "--child", variant.name(), Long.toString(watchdogMillis),
                    Long.toString(settings.windowMillis()), Integer.toString(settings.inFlight()),
                    Arrays.stream(measured).mapToObj(Integer::toString).collect(Collectors.joining(","))));
            command.addAll(server.properties());
            Process child = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            try (BufferedReader in = new BufferedReader(new InputStreamReader(child.getInputStream(),
                    StandardCharsets.UTF_8));
                    PrintWriter out = new PrintWriter(child.getOutputStream(), true, StandardCharsets.UTF_8)) {
                String prefix = expect(in, "ready")[1];
                for (int size : measured) {
                    String[] acquired = expect(in, "acquired");
                    progress(String.format(Locale.ROOT, "%s: %d locks held (%s failed), acquired in %.1f s",
                            variant.label, size, acquired[3], Long.parseLong(acquired[2]) / 1e9));
                    out.println("measure");
                    expect(in, "window-start");
                    long serverBefore = server.cpuNanos();
                    long wallBefore = System.nanoTime();
                    String[] window = expect(in, "window");
                    long serverNanos = server.cpuNanos() - serverBefore;
                    double wallSeconds = (System.nanoTime() - wallBefore) / 1e9;
                    // counted after the server's CPU time was read: the count's own cost is not the holding's
                    long onServer = server.heldLocks(prefix, size);
                    long clientNanos = Long.parseLong(window[2]);
                    double clientSeconds = Long.parseLong(window[3]) / 1e9;
                    Row row = new Row(variant, watchdogMillis, size, Long.parseLong(acquired[2]) / 1e9,
                            Long.parseLong(acquired[3]), clientNanos / 1e9 / clientSeconds,
                            serverNanos / 1e9 / wallSeconds, clientNanos / 1e3 / (size * clientSeconds),
                            serverNanos / 1e3 / (size * wallSeconds), Long.parseLong(window[4]), onServer,
                            (window.length > 5) ? window[5] : "");
                    rows.add(row);
                    progress(String.format(Locale.ROOT, "%s: %d held over %.1f s: client %.3f cores, server %.3f "
                            + "cores, %d loss reports, %d on the server", variant.label, size, clientSeconds,
                            row.clientCores(), row.serverCores(), row.lossReports(), onServer));
                    out.println("next");
                }
                String[] released = expect(in, "released");
                long left = server.heldLocks(prefix, sizes[sizes.length - 1]);
                releases.add(new Release(variant, watchdogMillis, Integer.parseInt(released[1]),
                        Long.parseLong(released[2]) / 1e9, Long.parseLong(released[3]), left));
                out.println("exit");
            }
            if (!child.waitFor(60, TimeUnit.SECONDS)) {
                child.destroyForcibly();
                throw new IllegalStateException(variant.label + ": the client JVM did not exit");
            }
            if (child.exitValue() != 0) {
                throw new IllegalStateException(variant.label + ": the client JVM exited with " + child.exitValue());
            }
        }
    }

    /** Reads the child's lines until one starts with {@code word}; its fields, split at tabs. */
    private static String[] expect(BufferedReader in, String word) throws IOException {
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith(word + "\t") || line.equals(word)) {
                return line.split("\t");
            }
            // anything else the client printed (a library writing to stdout) passes through
            System.err.println("[client] " + line);
        }
        throw new IllegalStateException("The client JVM ended before saying '" + word + "'");
    }

    /** The table for docs/performance.md, the releases, and how to run it again. */
    static void print(Run run, Settings settings, PrintStream out) {
        out.println();
        out.printf(Locale.ROOT, "Held watchdog locks, one client process, %.0f s windows, %d acquisitions in flight:%n",
                settings.windowMillis() / 1e3, settings.inFlight());
        out.println();
        out.println("| backend | watchdog | held locks | acquisition s | client cores | server cores | "
                + "client µs/lock-second | server µs/lock-second | lost (reports) | lost (missing on the server) |");
        out.println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (Row r : run.rows()) {
            out.printf(Locale.ROOT, "| %s | %.0f s | %s | %s | %.3f | %.3f | %s | %s | %s | %s |%n",
                    r.variant().label, r.watchdogMillis() / 1e3,
                    (r.size() == 0) ? "0 (idle)" : String.format(Locale.ROOT, "%,d", r.size()),
                    (r.size() == 0) ? "" : String.format(Locale.ROOT, "%.1f", r.acquisitionSeconds()), r.clientCores(),
                    r.serverCores(), perLockSecond(r.clientUsPerLockSecond()), perLockSecond(r.serverUsPerLockSecond()),
                    (r.variant() == Variant.REDISSON) ? "n/a" : bold(r.lossReports()), bold(r.missing())
                            + ((r.acquireFailures() > 0) ? " (" + r.acquireFailures() + " not acquired)" : ""));
        }
        out.println();
        for (Release r : run.releases()) {
            out.printf(Locale.ROOT, "- %s (watchdog %.0f s): released %,d locks in %.1f s, %d releases failed or "
                    + "found the lock gone; left on the server: %s%n", r.variant().label, r.watchdogMillis() / 1e3,
                    r.held(), r.seconds(), r.failures(), bold(r.leftOnServer()));
        }
        List<Row> lost = run.rows().stream().filter(r -> !r.firstLoss().isEmpty()).toList();
        if (!lost.isEmpty()) {
            out.println();
            out.println("First loss report per window with losses:");
            for (Row r : lost) {
                out.printf(Locale.ROOT, "- %s, %,d held: %s%n", r.variant().label, r.size(), r.firstLoss());
            }
        }
        out.println();
        out.println("Client CPU: the client JVM's process CPU time over the window (every thread: renewal, loss checks, "
                + "GC, the idle application). Server CPU: redis-server's /proc/<pid>/stat; PostgreSQL's postmaster and "
                + "every process under it; ZooKeeper's server threads (TestingServer, in the harness JVM); the etcd "
                + "process. Per lock-second: CPU time over (held locks × window), the idle application's share "
                + "included (the 0 row: no lock held, a window of at most 10 s).");
        out.println();
        String variants = run.rows().stream().map(r -> r.variant().label).distinct().collect(Collectors.joining(","));
        out.printf(Locale.ROOT, "Reproduce: `java -cp benchmarks/target/distlock-benchmarks.jar %s %s %.0f %.0f %s "
                + "%.0f` (or `benchmarks/run.sh full held` for every variant)%n", HeldLocks.class.getName(),
                Arrays.stream(settings.sizes()).mapToObj(Integer::toString).collect(Collectors.joining(",")),
                settings.windowMillis() / 1e3, settings.watchdogMillis() / 1e3,
                (variants.split(",").length == Variant.values().length) ? "all" : variants,
                settings.longWatchdogMillis() / 1e3);
    }

    private static String perLockSecond(double us) {
        return Double.isFinite(us) ? String.format(Locale.ROOT, "%.2f", us) : "–";
    }

    private static String bold(long value) {
        return (value == 0) ? "0" : "**" + value + "**";
    }

    private static void progress(String what) {
        System.err.printf(Locale.ROOT, "[%tT] held locks: %s%n", System.currentTimeMillis(), what);
    }

    /**
     * One variant's server, started by this JVM: its CPU time, the connection properties the client needs, and the
     * count of locks it holds.
     */
    abstract static class Server implements AutoCloseable {

        final long ticksPerSecond = Counters.clockTicksPerSecond();

        static Server start(Variant variant) throws Exception {
            return switch (variant) {
                case DISTLOCK_REDIS, REDISSON -> new Redis();
                case DISTLOCK_JDBC -> new Postgres();
                case DISTLOCK_ZOOKEEPER -> new ZooKeeper();
                case DISTLOCK_ETCD -> new Etcd();
            };
        }

        /** {@code name=value} pairs for the client's application. */
        abstract List<String> properties();

        /** The server's CPU time so far. */
        abstract long cpuNanos();

        /** The locks held on the server now, among keys {@code prefix + 0 .. size - 1} where the server can tell. */
        abstract long heldLocks(String prefix, int size) throws Exception;

        long procNanos(long pid) {
            long[] times = Counters.procTimes(pid);
            return (times[0] + times[1]) * 1_000_000_000L / ticksPerSecond;
        }

        @Override
        public abstract void close() throws Exception;
    }

    /** A {@code redis-server}. */
    static final class Redis extends Server {

        /**
         * Counts the keys {@code ARGV[1] .. ARGV[1]..ARGV[3]} from {@code ARGV[2]} that are a lock held by one owner:
         * a hash with one field (the owner, {@code <client id>:<owner id>}) and a TTL.
         */
        private static final String COUNT = "local n = 0 "
                + "for i = tonumber(ARGV[2]), tonumber(ARGV[3]) do "
                + "local k = ARGV[1] .. i "
                + "if redis.call('type', k).ok == 'hash' and redis.call('hlen', k) == 1 "
                + "and redis.call('pttl', k) > 0 then n = n + 1 end end "
                + "return n";

        /** Keys per script call: short enough not to block the server's renewals for long (~ms). */
        private static final int CHUNK = 5_000;

        private final RedisServer redis = RedisServer.start();

        @Override
        List<String> properties() {
            return List.of("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + redis.port(),
                    "distlock.backend=redis");
        }

        @Override
        long cpuNanos() {
            return procNanos(redis.pid());
        }

        @Override
        long heldLocks(String prefix, int size) {
            long held = 0;
            for (int from = 0; from < size; from += CHUNK) {
                held += ((Number) RespClient.callOnce(redis.port(), "EVAL", COUNT, "0", prefix, Integer.toString(from),
                        Integer.toString(Math.min(size, from + CHUNK) - 1))).longValue();
            }
            return held;
        }

        @Override
        public void close() {
            redis.close();
        }
    }

    /** An embedded PostgreSQL (zonky), its lock table created by the client's application. */
    static final class Postgres extends Server {

        private final EmbeddedPostgres postgres = EmbeddedPostgres.builder().setPort(0)
                // PostgreSQL's own default; the embedded server turns it off unless told
                .setServerConfig("synchronous_commit", "on").start();
        private final Connection monitor;
        private final long postmasterPid;

        Postgres() throws Exception {
            try {
                monitor = DriverManager.getConnection(postgres.getJdbcUrl("postgres", "postgres"));
                try (Statement statement = monitor.createStatement();
                        ResultSet rows = statement.executeQuery("SELECT pg_backend_pid()")) {
                    rows.next();
                    postmasterPid = ProcessHandle.of(rows.getLong(1)).flatMap(ProcessHandle::parent)
                            .orElseThrow(() -> new IllegalStateException("PostgreSQL's postmaster not found")).pid();
                }
            }
            catch (SQLException | RuntimeException ex) {
                postgres.close();
                throw ex;
            }
        }

        @Override
        List<String> properties() {
            return List.of("distlock.backend=jdbc", "spring.datasource.url=" + postgres.getJdbcUrl("postgres",
                    "postgres"), "distlock.jdbc.initialize-schema=always");
        }

        /** The postmaster and every process under it, and what its exited children used. */
        @Override
        long cpuNanos() {
            long ticks = 0;
            List<Long> pids = Stream.concat(Stream.of(postmasterPid), ProcessHandle.of(postmasterPid).stream()
                    .flatMap(ProcessHandle::descendants).map(ProcessHandle::pid)).toList();
            for (long pid : pids) {
                long[] times = Counters.procTimes(pid);
                ticks += times[0] + times[1] + ((pid == postmasterPid) ? times[2] + times[3] : 0);
            }
            return ticks * 1_000_000_000L / ticksPerSecond;
        }

        /** Rows with an owner whose expiry (epoch µs by the database's clock) has not passed. */
        @Override
        long heldLocks(String prefix, int size) throws SQLException {
            try (Statement statement = monitor.createStatement();
                    ResultSet rows = statement.executeQuery("SELECT count(*) FROM distlock_lock WHERE owner IS NOT "
                            + "NULL AND expires_at > (extract(epoch FROM clock_timestamp()) * 1000000)::bigint")) {
                rows.next();
                return rows.getLong(1);
            }
        }

        @Override
        public void close() throws Exception {
            try {
                monitor.close();
            }
            finally {
                postgres.close();
            }
        }
    }

    /** A ZooKeeper {@code TestingServer} in this JVM; its CPU time is its server threads'. */
    static final class ZooKeeper extends Server {

        private final TestingServer server = new TestingServer(true);
        private final CuratorFramework client;

        ZooKeeper() throws Exception {
            client = CuratorFrameworkFactory.newClient(server.getConnectString(), new RetryOneTime(100));
            client.start();
            if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
                close();
                throw new IllegalStateException("Could not connect to ZooKeeper at " + server.getConnectString());
            }
        }

        @Override
        List<String> properties() {
            return List.of("distlock.backend=zookeeper", "distlock.zookeeper.connect-string="
                    + server.getConnectString());
        }

        @Override
        long cpuNanos() {
            return BackendComparison.Setup.zooKeeperServerCpuNanos();
        }

        /** The nodes under the base path are the keys' nodes and, under them, the lock nodes: count the latter. */
        @Override
        long heldLocks(String prefix, int size) throws Exception {
            String basePath = DistlockZooKeeperProperties.DEFAULT_BASE_PATH;
            if (client.checkExists().forPath(basePath) == null) {
                return 0;
            }
            return client.getZookeeperClient().getZooKeeper().getAllChildrenNumber(basePath)
                    - client.getChildren().forPath(basePath).size();
        }

        @Override
        public void close() throws Exception {
            try {
                client.close();
            }
            finally {
                server.close();
            }
        }
    }

    /** An {@code etcd} process. */
    static final class Etcd extends Server {

        private final EtcdServer etcd;
        private final long pid;
        private final Client client;

        Etcd() {
            Set<Long> before = ProcessHandle.current().children().map(ProcessHandle::pid).collect(Collectors.toSet());
            etcd = EtcdServer.start();
            // the one child process that was not there before (the client JVM starts after it)
            List<Long> started = ProcessHandle.current().children().map(ProcessHandle::pid)
                    .filter(p -> !before.contains(p)).toList();
            if (started.size() != 1) {
                etcd.close();
                throw new IllegalStateException("Cannot tell etcd's process among " + started);
            }
            pid = started.get(0);
            client = Client.builder().endpoints(etcd.endpoint()).build();
        }

        @Override
        List<String> properties() {
            return List.of("distlock.backend=etcd", "distlock.etcd.endpoints=" + etcd.endpoint());
        }

        @Override
        long cpuNanos() {
            return procNanos(pid);
        }

        /** Keys under the namespace but the instances' announcements and the closed keys' marks. */
        @Override
        long heldLocks(String prefix, int size) throws Exception {
            String namespace = DistlockEtcdProperties.DEFAULT_NAMESPACE;
            return count(namespace) - count(namespace + "%instances/") - count(namespace + "%closed/");
        }

        private long count(String prefix) throws Exception {
            return client.getKVClient().get(ByteSequence.from(prefix, StandardCharsets.UTF_8),
                    GetOption.builder().isPrefix(true).withCountOnly(true).build()).get(30, TimeUnit.SECONDS)
                    .getCount();
        }

        @Override
        public void close() {
            try {
                client.close();
            }
            finally {
                etcd.close();
            }
        }
    }

    /**
     * The client JVM: starts the application on the server the parent names, and takes, holds and releases the locks
     * as the parent says on standard input, answering on standard output (tab-separated lines).
     */
    static final class ChildClient {

        private final Variant variant;
        private final ConfigurableApplicationContext context;
        private final LockTemplate template;
        private final RedissonClient redisson;
        private final String prefix;
        /** distlock's held locks, or null for raw Redisson. */
        private final AtomicReferenceArray<HeldLock> held;
        /** Raw Redisson's owner ids start here: lock {@code i}'s owner is {@code firstOwner + i}. */
        private final long firstOwner = LockOwner.next().id() + (1L << 40);
        private final LongAdder lossReports = new LongAdder();
        private final AtomicReference<String> firstLoss = new AtomicReference<>("");
        private final int inFlight;

        private ChildClient(Variant variant, ConfigurableApplicationContext context, int maxSize, int inFlight) {
            this.variant = variant;
            this.context = context;
            this.template = context.getBean(LockTemplate.class);
            this.redisson = (variant == Variant.REDISSON) ? context.getBean(RedissonClient.class) : null;
            this.prefix = template.fullKey(KEY);
            this.held = (variant == Variant.REDISSON) ? null : new AtomicReferenceArray<>(maxSize);
            this.inFlight = inFlight;
        }

        /** {@code <variant> <watchdog ms> <window ms> <in flight> <sizes> <property>...}. */
        static void main(String[] args) throws Exception {
            Variant variant = Variant.valueOf(args[0]);
            long watchdogMillis = Long.parseLong(args[1]);
            long windowMillis = Long.parseLong(args[2]);
            int inFlight = Integer.parseInt(args[3]);
            int[] sizes = HandoffLatency.parseInts(args[4]);
            List<String> properties = new ArrayList<>(Arrays.asList(args).subList(5, args.length));
            properties.add("distlock.watchdog-timeout=" + watchdogMillis + "ms");
            // a warning per lost lock would print up to 10^5 lines: the harness counts the reports itself
            properties.add("logging.level.io.github.distlock.DefaultLockTemplate=ERROR");
            BufferedReader parent = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            PrintStream out = System.out;
            try (ConfigurableApplicationContext context = BenchApplication.start(RedissonVariant.DEFAULT,
                    properties.toArray(String[]::new))) {
                ChildClient client = new ChildClient(variant, context, sizes[sizes.length - 1], inFlight);
                out.println("ready\t" + client.prefix);
                int taken = 0;
                long failures = 0;
                for (int size : sizes) {
                    long begin = System.nanoTime();
                    failures += client.acquire(taken, size);
                    out.println("acquired\t" + size + "\t" + (System.nanoTime() - begin) + "\t" + failures);
                    taken = size;
                    await(parent, "measure");
                    // the first renewals after the burst, and the JIT's work on the acquisition path, are not holding
                    Thread.sleep(Math.min(watchdogMillis, 5_000));
                    out.println("window-start");
                    long cpuBefore = Counters.jvmCpuNanos();
                    long wallBefore = System.nanoTime();
                    Thread.sleep((size == 0) ? Math.min(windowMillis, IDLE_WINDOW_MILLIS) : windowMillis);
                    long cpu = Counters.jvmCpuNanos() - cpuBefore;
                    long wall = System.nanoTime() - wallBefore;
                    out.println("window\t" + size + "\t" + cpu + "\t" + wall + "\t" + client.lossReports.sum() + "\t"
                            + client.firstLoss.get().replaceAll("\\s+", " "));
                    await(parent, "next");
                }
                long begin = System.nanoTime();
                long releaseFailures = client.release(taken);
                out.println("released\t" + taken + "\t" + (System.nanoTime() - begin) + "\t" + releaseFailures);
                await(parent, "exit");
            }
            System.exit(0);
        }

        private static void await(BufferedReader parent, String word) throws IOException {
            String line = parent.readLine();
            if (!word.equals(line)) {
                throw new IllegalStateException("expected '" + word + "' from the harness, got " + line);
            }
        }

        /** Takes locks {@code from .. to - 1}, {@link #inFlight} at a time; returns how many failed. */
        long acquire(int from, int to) throws InterruptedException {
            Semaphore permits = new Semaphore(inFlight);
            LongAdder failures = new LongAdder();
            AtomicReference<Throwable> firstFailure = new AtomicReference<>();
            // the locks must stay held far longer than any acquisition wait: wait briefly, renew by the watchdog
            LockOptions options = new LockOptions(Duration.ofSeconds(10), LockOptions.WATCHDOG, false);
            for (int i = from; i < to; i++) {
                permits.acquire();
                int index = i;
                CompletableFuture<?> acquisition;
                if (held == null) {
                    acquisition = redisson.getLock(prefix + i).lockAsync(firstOwner + i).toCompletableFuture();
                }
                else {
                    acquisition = template.acquireAsync(List.of(KEY + i), options).thenAccept(lock -> {
                        held.set(index, lock);
                        lock.whenLost(ex -> {
                            lossReports.increment();
                            firstLoss.compareAndSet("", "lock " + index + ": " + ex.getMessage());
                        });
                    });
                }
                acquisition.whenComplete((ignored, ex) -> {
                    if (ex != null) {
                        failures.increment();
                        firstFailure.compareAndSet(null, ex);
                    }
                    permits.release();
                });
            }
            permits.acquire(inFlight);
            if (firstFailure.get() != null) {
                System.err.println("[client] " + variant.label + ": " + failures.sum() + " acquisitions failed, the "
                        + "first with " + firstFailure.get());
            }
            return failures.sum();
        }

        /** Releases locks {@code 0 .. count - 1}; returns how many releases failed or found the lock gone. */
        long release(int count) throws InterruptedException {
            Semaphore permits = new Semaphore(inFlight);
            LongAdder failures = new LongAdder();
            for (int i = 0; i < count; i++) {
                permits.acquire();
                CompletableFuture<Boolean> release;
                if (held == null) {
                    // the owner's own unlock: fails (IllegalMonitorStateException) when the lock is not its own any more
                    release = redisson.getLock(prefix + i).unlockAsync(firstOwner + i).toCompletableFuture()
                            .thenApply(ignored -> true);
                }
                else {
                    HeldLock lock = held.getAndSet(i, null);
                    if (lock == null) {
                        failures.increment();
                        permits.release();
                        continue;
                    }
                    release = lock.releaseAsync().thenApply(ignored -> !lock.lostWhileHeld());
                }
                release.whenComplete((released, ex) -> {
                    if (ex != null || !Boolean.TRUE.equals(released)) {
                        failures.increment();
                    }
                    permits.release();
                });
            }
            permits.acquire(inFlight);
            return failures.sum();
        }
    }
}

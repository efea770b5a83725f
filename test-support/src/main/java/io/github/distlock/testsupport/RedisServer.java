package io.github.distlock.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import java.util.stream.Stream;

/**
 * A real {@code redis-server} process on a loopback port, for tests, benchmarks and the sample app's embedded mode.
 *
 * <p>The binary is the one shipped inside {@code com.github.codemonstur:embedded-redis} for this platform, or, where
 * it ships none, a {@code redis-server} found on the {@code PATH}. The system property {@value #SERVER_PROPERTY}, or
 * else the environment variable {@value #SERVER_ENV}, names another binary, e.g. a distribution's
 * {@code /usr/bin/redis-server}, to run the same tests against another Redis version. Each server's version, as
 * {@code INFO server} reports it, is {@link #version()}, logged once per binary; {@value #VERSION_PROPERTY} (or
 * {@value #VERSION_ENV}) makes a server that reports another version fail to start, so that a run meant for one Redis
 * version cannot pass on another unnoticed.
 *
 * <p>The server runs without persistence ({@code --save "" --appendonly no}), so a restart loses every key, as a Redis
 * without AOF would after a crash.
 *
 * <p>Each server has its own temporary directory (its copy of the binary, its log, and whatever it writes: a cluster
 * node's {@code nodes.conf}, a sentinel's rewritten configuration), deleted by {@link #close()}. A JVM shutdown hook
 * kills every server not yet closed and deletes its directory, so a test run that dies half-way leaves no process
 * behind; tests still close their servers themselves.
 *
 * <p>{@link RedisCluster} and {@link RedisSentinelSetup} build a cluster and a sentinel set-up from these servers.
 */
public final class RedisServer implements AutoCloseable {

    /** The system property naming the {@code redis-server} binary to run instead of the embedded one. */
    public static final String SERVER_PROPERTY = "distlock.redis.server";
    /** The environment variable naming the binary when {@value #SERVER_PROPERTY} is not set. */
    public static final String SERVER_ENV = "DISTLOCK_REDIS_SERVER";
    /** The system property with the version every server must report, or a prefix of it ({@code 7.0}). */
    public static final String VERSION_PROPERTY = "distlock.redis.version";
    /** The environment variable with the version when {@value #VERSION_PROPERTY} is not set. */
    public static final String VERSION_ENV = "DISTLOCK_REDIS_VERSION";

    private static final System.Logger LOG = System.getLogger(RedisServer.class.getName());
    private static final String HOST = "127.0.0.1";
    private static final Duration START_TIMEOUT = Duration.ofSeconds(10);
    private static final String READY = "Ready to accept connections";
    /** Sentinel mode logs no "ready" line in 6.2; it logs its id once it has set itself up. */
    private static final String SENTINEL_READY = "Sentinel ID is";
    private static final String CONFIG_FILE = "redis.conf";
    private static final Object SPAWN_LOCK = new Object();
    /** Servers not yet closed: the shutdown hook kills them and deletes their directories. */
    private static final List<RedisServer> OPEN = new ArrayList<>();
    /** The binaries whose version has been logged (by origin: embedded-redis's is copied for every server). */
    private static final Set<String> LOGGED = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            List<RedisServer> open;
            synchronized (OPEN) {
                open = new ArrayList<>(OPEN);
            }
            open.forEach(RedisServer::kill);
            open.forEach(RedisServer::deleteWorkDir);
        }, "redis-server-reaper"));
    }

    private final Path binary;
    private final String binarySource;
    private final Path workDir;
    private final int port;
    private final Options options;
    private Process process;
    private String version;

    private RedisServer(Binary binary, Path workDir, int port, Options options) {
        this.binary = binary.path();
        this.binarySource = binary.source();
        this.workDir = workDir;
        this.port = port;
        this.options = options;
    }

    /** Starts a server on a free loopback port and waits until it answers {@code PING}. */
    public static RedisServer start() {
        return start(Options.PLAIN);
    }

    /** Starts a server on the given loopback port and waits until it answers {@code PING}. */
    public static RedisServer start(int port) {
        return start(port, Options.PLAIN);
    }

    /**
     * Starts a server with extra settings (cluster mode, replication, sentinel mode) on a port from
     * {@code options.ports()}, trying other ports when the chosen one turns out to be taken.
     */
    static RedisServer start(Options options) {
        IllegalStateException last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            try {
                return start(options.ports().getAsInt(), options);
            }
            catch (IllegalStateException ex) {
                // another process may have taken the free port between probing and binding: try another
                last = ex;
            }
        }
        throw last;
    }

    private static RedisServer start(int port, Options options) {
        Path workDir;
        try {
            workDir = Files.createTempDirectory("distlock-redis-");
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Could not create a directory for a redis-server", ex);
        }
        RedisServer server;
        try {
            if (options.configFile() != null) {
                Files.writeString(workDir.resolve(CONFIG_FILE), options.configFile());
            }
            server = new RedisServer(locateBinary(workDir), workDir, port, options);
        }
        catch (IOException | RuntimeException ex) {
            deleteRecursively(workDir);
            throw ex instanceof IOException io ? new UncheckedIOException("Could not prepare a redis-server", io)
                    : (RuntimeException) ex;
        }
        synchronized (OPEN) {
            OPEN.add(server);
        }
        try {
            server.launch();
            server.checkVersion();
        }
        catch (RuntimeException ex) {
            server.close();
            throw ex;
        }
        return server;
    }

    /** The host the server listens on: always the IPv4 loopback address. */
    public String host() {
        return HOST;
    }

    /** The port the server listens on; it stays the same across {@link #restart()}. */
    public int port() {
        return port;
    }

    /** A {@code redis://host:port} address, as Redisson and Lettuce take it. */
    public String uri() {
        return "redis://" + HOST + ":" + port;
    }

    /** A {@code 127.0.0.1:port} address, as {@code spring.data.redis.cluster.nodes} and {@code sentinel.nodes} take it. */
    public String address() {
        return HOST + ":" + port;
    }

    /** The server's own working directory: its binary, log and state files; {@link #close()} deletes it. */
    public Path directory() {
        return workDir;
    }

    /** The binary this server runs. */
    public Path binary() {
        return binary;
    }

    /** The version the server reported in {@code INFO server} when it started, e.g. {@code 7.0.15}. */
    public String version() {
        return version;
    }

    /** The process id of the running server. */
    public long pid() {
        return process.pid();
    }

    /** Whether the server process is alive. */
    public boolean isRunning() {
        return process != null && process.isAlive();
    }

    /** Stops the server: {@code SIGTERM}, then {@code SIGKILL} if it has not exited within 5 seconds. */
    public synchronized void stop() {
        if (process == null) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        }
        catch (InterruptedException ex) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        process = null;
    }

    /**
     * Sends {@code SIGTERM} without waiting, so that several servers shut down side by side; a later {@link #stop()} or
     * {@link #close()} waits for the exit.
     */
    synchronized void signalStop() {
        if (process != null) {
            process.destroy();
        }
    }

    /**
     * Kills the server with {@code SIGKILL}, as a crash or an out-of-memory kill would: no shutdown, no goodbye to
     * replicas, sentinels or cluster peers. Waits until the process is gone; the directory stays until {@link #close()}
     * (so {@link #restart()} finds a cluster node's {@code nodes.conf} or a sentinel's state again).
     */
    public synchronized void kill() {
        if (process == null) {
            return;
        }
        try {
            process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        process = null;
    }

    /**
     * Starts the server again on the same port and with the same settings, empty (there is no persistence). A cluster
     * node or sentinel keeps the state it wrote to its directory and rejoins; a former master comes back as a master
     * until a sentinel or the cluster turns it into a replica.
     */
    public synchronized void restart() {
        stop();
        launch();
    }

    /** Stops the server and deletes its working directory. */
    @Override
    public void close() {
        stop();
        synchronized (OPEN) {
            OPEN.remove(this);
        }
        deleteWorkDir();
    }

    @Override
    public String toString() {
        return "redis-server " + version + " " + uri() + " (" + binary + ")";
    }

    private synchronized void launch() {
        List<String> command = new ArrayList<>();
        command.add(binary.toString());
        if (options.configFile() != null) {
            // the file comes first; a sentinel rewrites it, which is why each server has its own
            command.add(workDir.resolve(CONFIG_FILE).toString());
        }
        if (options.sentinel()) {
            command.add("--sentinel");
        }
        command.addAll(List.of("--port", Integer.toString(port), "--bind", HOST,
                "--save", "", "--appendonly", "no",
                "--dir", workDir.toString(), "--daemonize", "no", "--loglevel", "notice"));
        command.addAll(options.arguments());
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(workDir.resolve("redis.log").toFile());
        process = spawn(builder);
        String ready = options.sentinel() ? SENTINEL_READY : READY;
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                String log = readLog();
                stop();
                throw new IllegalStateException("redis-server exited on port " + port + ": " + log);
            }
            // PING alone could be answered by another server already on this port: wait for our own log line
            if (readLog().contains(ready) && ping()) {
                return;
            }
            // readiness can only be polled; 20 ms keeps a ~0.25 s start near its real cost
            try {
                TimeUnit.MILLISECONDS.sleep(20);
            }
            catch (InterruptedException ex) {
                stop();
                Thread.currentThread().interrupt();
                throw new IllegalStateException("Interrupted while starting redis-server", ex);
            }
        }
        stop();
        throw new IllegalStateException("redis-server did not answer PING on port " + port + " within " + START_TIMEOUT);
    }

    /**
     * Starts the process. A child forked while another thread still writes a copy of the binary inherits that
     * thread's write handle until it execs, and an exec of a file open for writing fails with "Text file busy"
     * ({@code ETXTBSY}): copies and forks here take turns, and a fork by other code in the JVM (a test starting a JVM)
     * that still collides is retried briefly.
     */
    private Process spawn(ProcessBuilder builder) {
        for (int attempt = 1; ; attempt++) {
            try {
                synchronized (SPAWN_LOCK) {
                    return builder.start();
                }
            }
            catch (IOException ex) {
                if (attempt == 20 || !String.valueOf(ex.getMessage()).contains("error=26")) {
                    throw new UncheckedIOException("Could not start " + binary, ex);
                }
            }
            try {
                TimeUnit.MILLISECONDS.sleep(50);
            }
            catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("Interrupted while starting " + binary, ex);
            }
        }
    }

    /**
     * Reads the version the running server reports, logs it once per binary, and holds it against
     * {@value #VERSION_PROPERTY} / {@value #VERSION_ENV} when one is set.
     */
    private void checkVersion() {
        String info;
        try (RespClient client = RespClient.connect(port)) {
            info = client.callString("INFO", "server");
        }
        version = versionIn(info);
        if (version == null) {
            throw new IllegalStateException("The server from " + binarySource + " on port " + port
                    + " reports no redis_version in INFO server: is it a redis-server?");
        }
        if (LOGGED.add(binarySource)) {
            LOG.log(System.Logger.Level.INFO, "redis-server {0} from {1}", version, binarySource);
        }
        requireVersion(version, setting(VERSION_PROPERTY, VERSION_ENV), "redis-server from " + binarySource);
    }

    /** The {@code redis_version} field of an {@code INFO server} reply, or {@code null} if it has none. */
    static String versionIn(String info) {
        if (info == null) {
            return null;
        }
        for (String line : info.split("\r?\n")) {
            if (line.startsWith("redis_version:")) {
                String value = line.substring("redis_version:".length()).trim();
                return value.isEmpty() ? null : value;
            }
        }
        return null;
    }

    /**
     * Fails unless {@code reported} is the expected version or starts with it followed by a dot ({@code 7.0} accepts
     * {@code 7.0.15}, not {@code 7.01.0}).
     *
     * @param expected the setting and its value, or {@code null} when none is set
     * @throws IllegalArgumentException when the version is another: the setting is wrong for this binary
     */
    static void requireVersion(String reported, Setting expected, String what) {
        if (expected == null) {
            return;
        }
        String want = expected.value();
        if (!reported.equals(want) && !reported.startsWith(want + ".")) {
            throw new IllegalArgumentException(what + " reports Redis " + reported + ", but " + expected.name()
                    + " asks for " + want);
        }
    }

    private boolean ping() {
        try (RespClient client = RespClient.connect(port, Duration.ofMillis(500))) {
            return "PONG".equals(client.call("PING"));
        }
        catch (RuntimeException ex) {
            return false;
        }
    }

    private String readLog() {
        try {
            return Files.readString(workDir.resolve("redis.log"));
        }
        catch (IOException ex) {
            return "(no log)";
        }
    }

    private void deleteWorkDir() {
        deleteRecursively(workDir);
    }

    private static void deleteRecursively(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
        catch (IOException ex) {
            // already gone, or unreadable: nothing more to delete
        }
    }

    private static Binary locateBinary(Path workDir) throws IOException {
        Setting configured = setting(SERVER_PROPERTY, SERVER_ENV);
        if (configured != null) {
            return configuredBinary(configured);
        }
        String resource = embeddedResourceName();
        if (resource != null) {
            try (InputStream in = RedisServer.class.getClassLoader().getResourceAsStream(resource)) {
                if (in != null) {
                    Path target = workDir.resolve("redis-server");
                    // see spawn(): no fork may happen while the copy is open for writing
                    synchronized (SPAWN_LOCK) {
                        Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
                    }
                    if (!target.toFile().setExecutable(true)) {
                        throw new IOException("Cannot make " + target + " executable");
                    }
                    return new Binary(target, "embedded-redis's " + resource);
                }
            }
        }
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(java.io.File.pathSeparator)) {
                Path candidate = Path.of(dir, "redis-server");
                if (Files.isExecutable(candidate)) {
                    return new Binary(candidate, candidate + " (found on the PATH)");
                }
            }
        }
        throw new IllegalStateException("No redis-server for " + System.getProperty("os.name") + "/"
                + System.getProperty("os.arch") + ": embedded-redis ships none and none is on the PATH "
                + "(install one, or point " + SERVER_PROPERTY + " or " + SERVER_ENV + " at a binary)");
    }

    /**
     * The binary a setting names.
     *
     * @throws IllegalArgumentException naming the setting when it names no executable file
     */
    static Binary configuredBinary(Setting configured) {
        Path path = Path.of(configured.value());
        if (!Files.isRegularFile(path) || !Files.isExecutable(path)) {
            throw new IllegalArgumentException(configured.name() + "=" + configured.value()
                    + " is not an executable file: name a redis-server binary, e.g. /usr/bin/redis-server");
        }
        return new Binary(path, path + " (" + configured.name() + ")");
    }

    /** The system property if set, else the environment variable if set, else {@code null}; blank counts as unset. */
    private static Setting setting(String property, String env) {
        String value = System.getProperty(property);
        if (value != null && !value.isBlank()) {
            return new Setting(property, value.trim());
        }
        value = System.getenv(env);
        if (value != null && !value.isBlank()) {
            return new Setting(env, value.trim());
        }
        return null;
    }

    /**
     * A setting as found, with the name it was found under, so that an error can name what to change.
     *
     * @param name the system property or environment variable
     * @param value its value, trimmed
     */
    record Setting(String name, String value) {
    }

    /**
     * The binary to run and where it came from.
     *
     * @param path the executable
     * @param source where it came from, for the log and errors: the path and the setting that named it, the
     *        resource of embedded-redis it was copied from, or the path found on the {@code PATH}
     */
    record Binary(Path path, String source) {
    }

    private static String embeddedResourceName() {
        String os = System.getProperty("os.name").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch").toLowerCase(Locale.ROOT);
        boolean x64 = arch.equals("amd64") || arch.equals("x86_64");
        boolean arm64 = arch.equals("aarch64") || arch.equals("arm64");
        if (os.contains("linux")) {
            return x64 ? "redis-server-6.2.6-v5-linux-amd64" : arm64 ? "redis-server-6.2.7-linux-arm64" : null;
        }
        if (os.contains("mac")) {
            return x64 ? "redis-server-6.2.6-v5-darwin-amd64" : arm64 ? "redis-server-6.2.6-v5-darwin-arm64" : null;
        }
        return null;
    }

    /**
     * How to run a server beyond the defaults.
     *
     * @param arguments extra command-line settings, e.g. {@code --cluster-enabled yes}; they come after the defaults
     *        and so override them
     * @param configFile the content of a configuration file written to the server's directory and passed first, or
     *        {@code null} for none (a sentinel needs one: it rewrites it)
     * @param sentinel whether to run in sentinel mode
     * @param ports picks the port to try next
     */
    record Options(List<String> arguments, String configFile, boolean sentinel, IntSupplier ports) {

        static final Options PLAIN = new Options(List.of(), null, false, Ports::freePort);

        Options {
            arguments = List.copyOf(arguments);
        }
    }
}

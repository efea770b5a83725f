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
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import java.util.stream.Stream;

/**
 * A real {@code redis-server} process on a loopback port, for tests, benchmarks and the sample app's embedded mode.
 *
 * <p>The binary is the one shipped inside {@code com.github.codemonstur:embedded-redis} for this platform, or, where
 * it ships none, a {@code redis-server} found on the {@code PATH}. {@code DISTLOCK_REDIS_SERVER} names another binary.
 * The server runs without persistence ({@code --save "" --appendonly no}), so a restart loses every key, as a Redis
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

    private static final String HOST = "127.0.0.1";
    private static final Duration START_TIMEOUT = Duration.ofSeconds(10);
    private static final String READY = "Ready to accept connections";
    /** Sentinel mode logs no "ready" line in 6.2; it logs its id once it has set itself up. */
    private static final String SENTINEL_READY = "Sentinel ID is";
    private static final String CONFIG_FILE = "redis.conf";
    private static final Object SPAWN_LOCK = new Object();
    /** Servers not yet closed: the shutdown hook kills them and deletes their directories. */
    private static final List<RedisServer> OPEN = new ArrayList<>();

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
    private final Path workDir;
    private final int port;
    private final Options options;
    private Process process;

    private RedisServer(Path binary, Path workDir, int port, Options options) {
        this.binary = binary;
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
        return "redis-server " + uri() + " (" + binary + ")";
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

    private static Path locateBinary(Path workDir) throws IOException {
        String configured = System.getenv("DISTLOCK_REDIS_SERVER");
        if (configured != null && !configured.isBlank()) {
            return Path.of(configured);
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
                    return target;
                }
            }
        }
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(java.io.File.pathSeparator)) {
                Path candidate = Path.of(dir, "redis-server");
                if (Files.isExecutable(candidate)) {
                    return candidate;
                }
            }
        }
        throw new IllegalStateException("No redis-server for " + System.getProperty("os.name") + "/"
                + System.getProperty("os.arch") + ": embedded-redis ships none and none is on the PATH "
                + "(install one, or point DISTLOCK_REDIS_SERVER at a binary)");
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

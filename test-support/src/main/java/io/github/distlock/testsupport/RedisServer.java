package io.github.distlock.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real {@code redis-server} process on a loopback port, for tests, benchmarks and the sample app's embedded mode.
 *
 * <p>The binary is the one shipped inside {@code com.github.codemonstur:embedded-redis} for this platform, or, where
 * it ships none, a {@code redis-server} found on the {@code PATH}. {@code DISTLOCK_REDIS_SERVER} names another binary.
 * The server runs without persistence ({@code --save "" --appendonly no}), so a restart loses every key, as a Redis
 * without AOF would after a crash.
 *
 * <p>Every server started here is also stopped by a JVM shutdown hook, so a crashed test run leaves no process
 * behind; tests still stop their servers themselves.
 */
public final class RedisServer implements AutoCloseable {

    private static final String HOST = "127.0.0.1";
    private static final Duration START_TIMEOUT = Duration.ofSeconds(10);
    private static final List<RedisServer> RUNNING = new ArrayList<>();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            synchronized (RUNNING) {
                RUNNING.forEach(server -> server.process.destroyForcibly());
            }
        }, "redis-server-reaper"));
    }

    private final Path binary;
    private final Path workDir;
    private final int port;
    private Process process;

    private RedisServer(Path binary, Path workDir, int port) {
        this.binary = binary;
        this.workDir = workDir;
        this.port = port;
    }

    /** Starts a server on a free loopback port and waits until it answers {@code PING}. */
    public static RedisServer start() {
        IllegalStateException last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            try {
                return start(freePort());
            }
            catch (IllegalStateException ex) {
                // another process may have taken the free port between probing and binding: try another
                last = ex;
            }
        }
        throw last;
    }

    /** Starts a server on the given loopback port and waits until it answers {@code PING}. */
    public static RedisServer start(int port) {
        try {
            Path workDir = Files.createTempDirectory("distlock-redis-");
            RedisServer server = new RedisServer(locateBinary(workDir), workDir, port);
            server.launch();
            return server;
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Could not prepare a redis-server", ex);
        }
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
        synchronized (RUNNING) {
            RUNNING.remove(this);
        }
        process = null;
    }

    /** Starts the server again on the same port, empty (there is no persistence). */
    public synchronized void restart() {
        stop();
        launch();
    }

    /** Stops the server and deletes its working directory. */
    @Override
    public void close() {
        stop();
        try (Stream<Path> files = Files.walk(workDir)) {
            files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
        catch (IOException ex) {
            // a leftover temp directory is harmless
        }
    }

    @Override
    public String toString() {
        return "redis-server " + uri() + " (" + binary + ")";
    }

    private synchronized void launch() {
        ProcessBuilder builder = new ProcessBuilder(binary.toString(),
                "--port", Integer.toString(port), "--bind", HOST,
                "--save", "", "--appendonly", "no",
                "--dir", workDir.toString(), "--daemonize", "no", "--loglevel", "notice")
                .redirectErrorStream(true)
                .redirectOutput(workDir.resolve("redis.log").toFile());
        try {
            process = builder.start();
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Could not start " + binary, ex);
        }
        synchronized (RUNNING) {
            RUNNING.add(this);
        }
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                String log = readLog();
                stop();
                throw new IllegalStateException("redis-server exited on port " + port + ": " + log);
            }
            // PING alone could be answered by another server already on this port: wait for our own log line
            if (readLog().contains("Ready to accept connections") && ping()) {
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

    private boolean ping() {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(HOST, port), 200);
            socket.setSoTimeout(500);
            OutputStream out = socket.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            byte[] reply = in.readNBytes(7);
            return new String(reply, StandardCharsets.US_ASCII).startsWith("+PONG");
        }
        catch (IOException ex) {
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

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getByName(HOST))) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        }
        catch (IOException ex) {
            throw new UncheckedIOException("No free loopback port", ex);
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
                    Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
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
}

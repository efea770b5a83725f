package io.github.distlock.testsupport;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.Assumptions;

import static org.awaitility.Awaitility.await;

/**
 * A real etcd server, a process of its own on free loopback ports (client and peer) with a data directory of its own,
 * stopped and deleted by {@link #close()} (and by a shutdown hook if the test JVM ends first).
 *
 * <p>No Maven artifact ships an etcd server: the tests run the {@code etcd} binary named by the environment variable
 * {@code DISTLOCK_ETCD_SERVER}, or found on the {@code PATH} (Debian/Ubuntu: {@code apt-get install etcd-server};
 * elsewhere a release from https://github.com/etcd-io/etcd/releases). Without one they fail, saying so; on a
 * developer's machine {@code -Ddistlock.etcd.skip-if-missing=true} (or the environment variable
 * {@code DISTLOCK_ETCD_SKIP_IF_MISSING=true}) turns that into skipped tests, reported as such.
 */
public final class EtcdServer implements AutoCloseable {

    public static final String BINARY_VARIABLE = "DISTLOCK_ETCD_SERVER";
    public static final String SKIP_PROPERTY = "distlock.etcd.skip-if-missing";
    public static final String SKIP_VARIABLE = "DISTLOCK_ETCD_SKIP_IF_MISSING";

    private final Process process;
    private final Path dataDir;
    private final int clientPort;
    private final Thread shutdownHook;

    private EtcdServer(Process process, Path dataDir, int clientPort) {
        this.process = process;
        this.dataDir = dataDir;
        this.clientPort = clientPort;
        this.shutdownHook = new Thread(this::stopProcess, "etcd-test-server-stop");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    /** Why the server was not started, when the skip switch let a missing binary pass. */
    private static volatile String skipped;

    /**
     * Starts a server for a test class ({@code @BeforeAll}), or fails when there is no etcd binary; with the skip switch
     * on, returns {@code null} instead, and each test then skips through {@link #assumeRunning} (so that every test is
     * reported skipped: an abort in {@code @BeforeAll} is reported as nothing at all).
     */
    public static EtcdServer startUnlessSkipped() {
        try {
            return start();
        }
        catch (org.opentest4j.TestAbortedException missing) {
            skipped = missing.getMessage();
            return null;
        }
    }

    /** Skips the calling test when {@link #startUnlessSkipped()} found no binary; returns the server otherwise. */
    public static EtcdServer assumeRunning(EtcdServer server) {
        if (server == null) {
            Assumptions.abort(skipped);
        }
        return server;
    }

    /** Starts a server, or fails (or, with the switch on, aborts the calling test) when there is no etcd binary. */
    public static EtcdServer start() {
        Path binary = binary();
        for (int attempt = 1; ; attempt++) {
            try {
                return start(binary);
            }
            catch (PortTakenException ex) {
                if (attempt == 3) {
                    throw new IllegalStateException("etcd could not bind its ports three times", ex);
                }
            }
        }
    }

    /** The etcd binary: DISTLOCK_ETCD_SERVER, else "etcd" on the PATH. */
    public static Path binary() {
        return binary(System.getenv(), System.getProperties());
    }

    /** {@link #binary()}, looked up in the given environment and system properties. */
    public static Path binary(java.util.Map<String, String> environment, java.util.Properties properties) {
        String configured = environment.get(BINARY_VARIABLE);
        if (configured != null && !configured.isBlank()) {
            Path path = Path.of(configured);
            if (!Files.isExecutable(path)) {
                throw new IllegalStateException(BINARY_VARIABLE + "=" + configured + " is not an executable file");
            }
            return path;
        }
        String pathVariable = environment.getOrDefault("PATH", "");
        for (String directory : pathVariable.split(File.pathSeparator)) {
            if (!directory.isEmpty()) {
                Path candidate = Path.of(directory, "etcd");
                if (Files.isExecutable(candidate)) {
                    return candidate;
                }
            }
        }
        String message = "No etcd server binary: these tests run a real etcd. Install one (Debian/Ubuntu: "
                + "'apt-get install etcd-server'; elsewhere a release from https://github.com/etcd-io/etcd/releases) and "
                + "put 'etcd' on the PATH or set " + BINARY_VARIABLE + " to its path. To skip the etcd tests instead "
                + "(reported as skipped), run with -D" + SKIP_PROPERTY + "=true or set " + SKIP_VARIABLE + "=true.";
        if (Boolean.parseBoolean(properties.getProperty(SKIP_PROPERTY)) || Boolean.parseBoolean(environment.get(SKIP_VARIABLE))) {
            Assumptions.abort(message);
        }
        throw new IllegalStateException(message);
    }

    private static EtcdServer start(Path binary) {
        int clientPort = freePort();
        int peerPort = freePort();
        Path dataDir;
        try {
            dataDir = Files.createTempDirectory("distlock-etcd-");
        }
        catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        String client = "http://127.0.0.1:" + clientPort;
        String peer = "http://127.0.0.1:" + peerPort;
        List<String> command = List.of(binary.toString(),
                "--name", "distlock-test",
                "--data-dir", dataDir.resolve("data").toString(),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", "distlock-test=" + peer, "--initial-cluster-state", "new",
                // a single member elects itself at once; a short election timeout also lowers etcd's minimum lease
                // TTL (1.5 election timeouts) below the one-second leases the tests ask for
                "--heartbeat-interval", "50", "--election-timeout", "500",
                "--log-level", "warn");
        Process process;
        try {
            process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(dataDir.resolve("etcd.log").toFile()).start();
        }
        catch (IOException ex) {
            deleteRecursively(dataDir);
            throw new UncheckedIOException("could not run " + binary, ex);
        }
        EtcdServer server = new EtcdServer(process, dataDir, clientPort);
        try {
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).until(() -> {
                if (!process.isAlive()) {
                    String log = server.log();
                    if (log.contains("address already in use")) {
                        throw new PortTakenException(log);
                    }
                    throw new IllegalStateException("etcd exited with " + process.exitValue() + ":\n" + log);
                }
                return server.healthy();
            });
            return server;
        }
        catch (RuntimeException ex) {
            server.close();
            throw ex;
        }
    }

    private boolean healthy() {
        try {
            HttpURLConnection connection = (HttpURLConnection) URI.create(endpoint() + "/health").toURL().openConnection();
            connection.setConnectTimeout(500);
            connection.setReadTimeout(1000);
            try {
                return connection.getResponseCode() == 200
                        && new String(connection.getInputStream().readAllBytes(), StandardCharsets.UTF_8).contains("true");
            }
            finally {
                connection.disconnect();
            }
        }
        catch (IOException ex) {
            return false;
        }
    }

    /** The client endpoint, {@code http://127.0.0.1:<port>}. */
    public String endpoint() {
        return "http://127.0.0.1:" + clientPort;
    }

    public int clientPort() {
        return clientPort;
    }

    /** What the server logged. */
    String log() {
        try {
            return Files.readString(dataDir.resolve("etcd.log"));
        }
        catch (IOException ex) {
            return "(no log: " + ex.getMessage() + ")";
        }
    }

    @Override
    public void close() {
        stopProcess();
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        }
        catch (IllegalStateException shuttingDown) {
            // the hook runs anyway
        }
        deleteRecursively(dataDir);
    }

    private void stopProcess() {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        catch (InterruptedException ex) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            return socket.getLocalPort();
        }
        catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    private static void deleteRecursively(Path directory) {
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
        catch (IOException ex) {
            // a leftover temp directory is no reason to fail a test
        }
    }

    @Override
    public String toString() {
        return "etcd " + endpoint() + " (" + (process.isAlive() ? "running" : "stopped") + ")"
                + String.format(Locale.ROOT, " data %s", dataDir);
    }

    /** etcd could not bind a port picked as free (taken between the check and the start): try others. */
    private static final class PortTakenException extends RuntimeException {
        PortTakenException(String log) {
            super(log);
        }
    }
}

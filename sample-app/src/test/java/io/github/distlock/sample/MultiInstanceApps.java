package io.github.distlock.sample;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.github.distlock.testsupport.RedisServer;
import org.h2.tools.Server;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.springframework.core.io.ClassPathResource;
import org.springframework.jdbc.datasource.init.ScriptUtils;

/**
 * Three instances of the sample as separate JVMs, sharing one lock backend (see the subclasses) and one database (H2
 * as a TCP server in this JVM, or PostgreSQL), started before the class's tests and stopped after them.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class MultiInstanceApps {

    static final int INSTANCES = 3;
    private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(180);

    private SharedDatabase database;
    private final List<AppProcess> apps = new ArrayList<>();

    /** The default lock backend: one redis-server. */
    private RedisServer redis;

    /**
     * Starts the lock backend the instances share and returns the arguments that point an instance at it: by default
     * a redis-server on a free port.
     */
    List<String> startLockBackend() throws Exception {
        redis = RedisServer.start();
        return List.of("--spring.data.redis.host=" + redis.host(), "--spring.data.redis.port=" + redis.port());
    }

    /** Stops what {@link #startLockBackend()} started. */
    void stopLockBackend() throws Exception {
        if (redis != null) {
            redis.close();
        }
    }

    /** The redis-server the default {@link #startLockBackend()} started. */
    final RedisServer redis() {
        return redis;
    }

    /**
     * The database the instances share: its JDBC URL and credentials, and what stops it.
     *
     * @param schema the lock table's script, for a database that also holds the locks, else {@code null}
     */
    record SharedDatabase(String jdbcUrl, String user, String password, AutoCloseable server, String schema) {
    }

    /** Starts the shared database: by default H2 as a TCP server in this JVM. */
    SharedDatabase startDatabase() throws SQLException {
        Server h2 = startH2();
        return new SharedDatabase("jdbc:h2:tcp://127.0.0.1:" + h2.getPort() + "/mem:shop;DB_CLOSE_DELAY=-1", "sa", "",
                h2::stop, null);
    }

    /** The running instances. */
    final List<AppProcess> apps() {
        return apps;
    }

    /** A connection to the shared database, for the checks of subclasses. */
    final Connection connect() throws SQLException {
        return DriverManager.getConnection(database.jdbcUrl(), database.user(), database.password());
    }

    @BeforeAll
    void startServersAndInstances() throws Exception {
        List<String> backendArguments = startLockBackend();
        database = startDatabase();
        // the schemas once, here: three instances creating them at the same moment would race each other
        try (Connection connection = connect()) {
            ScriptUtils.executeSqlScript(connection, new ClassPathResource("schema.sql"));
            if (database.schema() != null) {
                ScriptUtils.executeSqlScript(connection, new ClassPathResource(database.schema()));
            }
        }
        Path logs = Path.of("target", "multi-instance-logs");
        for (int i = 0; i < INSTANCES; i++) {
            List<String> arguments = new ArrayList<>(backendArguments);
            arguments.addAll(List.of("--spring.datasource.url=" + database.jdbcUrl(),
                    "--spring.datasource.username=" + database.user(),
                    "--spring.datasource.password=" + database.password(), "--spring.sql.init.mode=never",
                    // buyers of one product queue for its lock; generous on a busy CI machine
                    "--distlock.wait-time=30s"));
            apps.add(AppProcess.launch(getClass().getSimpleName() + "-" + i, logs, arguments));
        }
        for (AppProcess app : apps) {
            app.awaitStarted(STARTUP_TIMEOUT);
        }
    }

    @AfterAll
    void stopEverything() throws Exception {
        apps.forEach(AppProcess::close);
        try {
            if (database != null) {
                database.server().close();
            }
        }
        finally {
            stopLockBackend();
        }
    }

    private static Server startH2() throws SQLException {
        SQLException last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            try {
                // -ifNotExists lets the instances create the in-memory database remotely
                return Server.createTcpServer("-tcpPort", Integer.toString(freePort()), "-ifNotExists").start();
            }
            catch (SQLException ex) {
                // the free port may have been taken between probing and binding: try another
                last = ex;
            }
        }
        throw last;
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
        catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }
}

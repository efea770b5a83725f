package io.github.distlock.chaos;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.github.distlock.jdbc.JdbcLockSchema;
import io.github.distlock.testsupport.PostgresServer;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

import static org.awaitility.Awaitility.await;

/**
 * One PostgreSQL server (a primary failover is discussed in docs/reliability.md, not run). Fault: the server killed
 * (SIGKILL of the postmaster) and restarted on its data directory a few seconds later: crash recovery, committed lock
 * rows kept.
 */
final class PostgresTopology implements Topology {

    private static final String TABLE = "distlock_lock";

    private final PostgresServer server = PostgresServer.start();

    PostgresTopology() {
        JdbcLockSchema.create(new DriverManagerDataSource(server.jdbcUrl(), server.user(), server.password()), TABLE);
    }

    @Override
    public String backend() {
        return "jdbc";
    }

    @Override
    public String name() {
        return "postgresql";
    }

    @Override
    public List<Integer> clientPorts() {
        return List.of(server.port());
    }

    @Override
    public List<String> clientProperties(Map<Integer, Integer> proxyPorts) {
        int port = proxyPorts.get(server.port());
        // a stalled connection must not hang a call for good: the driver gives up on a silent server after 5 s
        return List.of("--distlock.backend=jdbc", "--distlock.jdbc.initialize-schema=never",
                "--distlock.jdbc.table-name=" + TABLE,
                "--spring.datasource.url=jdbc:postgresql://127.0.0.1:" + port
                        + "/postgres?connectTimeout=2&socketTimeout=5&tcpKeepAlive=true",
                "--spring.datasource.username=" + server.user(), "--spring.datasource.password=" + server.password(),
                "--spring.datasource.hikari.connection-timeout=2000",
                "--spring.datasource.hikari.maximum-pool-size=12");
    }

    @Override
    public List<ServerFault> serverFaults() {
        return List.of(Topology.fault("kill-server", () -> {
            server.kill();
            return server::restart;
        }));
    }

    @Override
    public void awaitServing(Duration timeout) {
        if (!server.isRunning()) {
            server.restart();
        }
        await("PostgreSQL to answer").atMost(timeout).pollInterval(Duration.ofMillis(100)).until(() -> {
            try (Connection connection = DriverManager.getConnection(server.jdbcUrl(), server.user(),
                    server.password())) {
                return connection.isValid(2);
            }
            catch (SQLException ex) {
                return false;
            }
        });
    }

    @Override
    public void close() {
        server.close();
    }
}

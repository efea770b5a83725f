package io.github.distlock.testsupport;

import java.nio.file.Files;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PostgresServerTest {

    @Test
    void rowCommittedBeforeAKillIsThereAfterTheRestartOnTheSamePort() throws SQLException {
        long startedAt = System.nanoTime();
        PostgresServer postgres = PostgresServer.start();
        System.out.printf("PostgreSQL started in %d ms%n", millisSince(startedAt));
        int port = postgres.port();
        try {
            assertThat(postgres.jdbcUrl()).isEqualTo("jdbc:postgresql://127.0.0.1:" + port + "/postgres");
            assertThat(postgres.isRunning()).isTrue();
            List<Long> before;
            try (Connection connection = connect(postgres); Statement statement = connection.createStatement()) {
                statement.execute("CREATE TABLE orders (id INT PRIMARY KEY, state TEXT NOT NULL)");
                before = backendPids(postgres);
                assertThat(before).isNotEmpty();
                // autocommit: acknowledged means committed, and then it must survive the kill that follows at once
                statement.execute("INSERT INTO orders VALUES (1, 'paid')");

                long killedAt = System.nanoTime();
                postgres.kill();
                System.out.printf("postmaster killed and its processes gone in %d ms%n", millisSince(killedAt));
                assertThat(postgres.isRunning()).isFalse();
                assertThat(before).allSatisfy(pid -> assertThat(ProcessHandle.of(pid)
                        .filter(ProcessHandle::isAlive)).as("process %d", pid).isEmpty());
                assertThatThrownBy(() -> statement.executeQuery("SELECT 1")).isInstanceOf(SQLException.class);
            }
            assertThatThrownBy(() -> connect(postgres)).isInstanceOf(SQLException.class);

            long restartedAt = System.nanoTime();
            postgres.restart();
            System.out.printf("PostgreSQL restarted after crash recovery in %d ms%n", millisSince(restartedAt));
            assertThat(postgres.port()).isEqualTo(port);
            assertThat(postgres.isRunning()).isTrue();
            assertThat(postgres.log()).contains("database system was interrupted");
            try (Connection connection = connect(postgres); Statement statement = connection.createStatement()) {
                try (ResultSet rows = statement.executeQuery("SELECT id, state FROM orders")) {
                    assertThat(rows.next()).isTrue();
                    assertThat(rows.getInt(1)).isEqualTo(1);
                    assertThat(rows.getString(2)).isEqualTo("paid");
                    assertThat(rows.next()).isFalse();
                }
                assertThat(statement.executeUpdate("INSERT INTO orders VALUES (2, 'placed')")).isEqualTo(1);
            }
        }
        finally {
            long closingAt = System.nanoTime();
            postgres.close();
            System.out.printf("PostgreSQL closed in %d ms%n", millisSince(closingAt));
        }
        assertThat(postgres.isRunning()).isFalse();
        assertThat(Files.exists(postgres.directory())).isFalse();
    }

    private static Connection connect(PostgresServer postgres) throws SQLException {
        return DriverManager.getConnection(postgres.jdbcUrl(), postgres.user(), postgres.password());
    }

    /** The postmaster's children: the background processes and the backends of open connections. */
    private static List<Long> backendPids(PostgresServer postgres) throws SQLException {
        List<Long> pids = new ArrayList<>();
        try (Connection connection = connect(postgres); Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery("SELECT pid FROM pg_stat_activity")) {
            while (rows.next()) {
                pids.add(rows.getLong(1));
            }
        }
        return pids;
    }

    private static long millisSince(long nanos) {
        return (System.nanoTime() - nanos) / 1_000_000;
    }
}

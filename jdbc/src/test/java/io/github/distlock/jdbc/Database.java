package io.github.distlock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A database for one test class: a fresh in-memory H2, or a pooled connection to the PostgreSQL or MariaDB server of
 * this test JVM (started on first use, closed by JUnit at the end of the run), with distlock's lock table created.
 *
 * <pre>{@code @RegisterExtension static final Database db = Database.postgres();}</pre>
 */
final class Database implements BeforeAllCallback, AfterAllCallback {

    enum Kind {
        H2, POSTGRESQL, MARIADB
    }

    private final Kind kind;
    private HikariDataSource dataSource;
    private DatabaseServers server;

    private Database(Kind kind) {
        this.kind = kind;
    }

    static Database h2() {
        return new Database(Kind.H2);
    }

    static Database postgres() {
        return new Database(Kind.POSTGRESQL);
    }

    static Database mariaDb() {
        return new Database(Kind.MARIADB);
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        HikariConfig config = new HikariConfig();
        config.setPoolName("test-" + kind);
        // the fuzz test's 16 threads and its providers' renewals, with room to spare
        config.setMaximumPoolSize(24);
        if (kind == Kind.H2) {
            config.setJdbcUrl("jdbc:h2:mem:distlock-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1");
        }
        else {
            // once per test JVM: JUnit closes what is in the root store (AutoCloseable) when the run ends
            server = context.getRoot().getStore(ExtensionContext.Namespace.GLOBAL).computeIfAbsent(kind,
                    ignored -> (kind == Kind.POSTGRESQL) ? DatabaseServers.postgres() : DatabaseServers.mariaDb(),
                    DatabaseServers.class);
            config.setJdbcUrl(server.jdbcUrl());
            config.setUsername(server.user());
            config.setPassword(server.password());
        }
        dataSource = new HikariDataSource(config);
        JdbcLockSchema.create(dataSource, JdbcLockOptions.DEFAULT_TABLE_NAME);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (dataSource != null) {
            dataSource.close();
        }
    }

    Kind kind() {
        return kind;
    }

    DataSource dataSource() {
        return dataSource;
    }

    /** JDBC URL, user and password, for another JVM. */
    List<String> connectionArguments() {
        return List.of(dataSource.getJdbcUrl(), dataSource.getUsername(), String.valueOf(dataSource.getPassword()));
    }

    int update(String sql, Object... arguments) {
        try (Connection connection = dataSource.getConnection();
                PreparedStatement statement = connection.prepareStatement(sql)) {
            for (int i = 0; i < arguments.length; i++) {
                statement.setObject(i + 1, arguments[i]);
            }
            return statement.executeUpdate();
        }
        catch (SQLException ex) {
            throw new IllegalStateException(sql, ex);
        }
    }

    /** The rows {@code sql} selects, each a map of lower-case column label to value. */
    List<Map<String, Object>> query(String sql, Object... arguments) {
        try (Connection connection = dataSource.getConnection();
                PreparedStatement statement = connection.prepareStatement(sql)) {
            for (int i = 0; i < arguments.length; i++) {
                statement.setObject(i + 1, arguments[i]);
            }
            List<Map<String, Object>> result = new ArrayList<>();
            try (ResultSet rows = statement.executeQuery()) {
                int columns = rows.getMetaData().getColumnCount();
                while (rows.next()) {
                    Map<String, Object> row = new java.util.LinkedHashMap<>();
                    for (int c = 1; c <= columns; c++) {
                        Object value = rows.getObject(c);
                        row.put(rows.getMetaData().getColumnLabel(c).toLowerCase(java.util.Locale.ROOT),
                                (value instanceof byte[] bytes) ? new String(bytes, java.nio.charset.StandardCharsets.UTF_8)
                                        : value);
                    }
                    result.add(row);
                }
            }
            return result;
        }
        catch (SQLException ex) {
            throw new IllegalStateException(sql, ex);
        }
    }

    /** The lock row of {@code key}, or {@code null}. */
    Map<String, Object> lockRow(String key) {
        List<Map<String, Object>> rows = query("SELECT lock_key, owner, instance, expires_at, token FROM distlock_lock "
                + "WHERE lock_key = ?", key);
        return rows.isEmpty() ? null : rows.get(0);
    }

    /** Whether {@code key}'s row is held by someone right now, by the database's clock. */
    boolean heldInDatabase(String key, JdbcDialect dialect) {
        return !query("SELECT 1 FROM distlock_lock WHERE lock_key = ? AND owner IS NOT NULL AND expires_at > "
                + dialect.now(), key).isEmpty();
    }

    @Override
    public String toString() {
        return kind.toString();
    }
}

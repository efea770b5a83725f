package io.github.distlock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Set;
import java.util.function.LongSupplier;

import javax.sql.DataSource;

import io.github.distlock.DistlockConfigurationException;

/**
 * The lock table's statements: take a row, free it, renew an instance's rows, raise a token, read whether a row is
 * still held. Each runs on a connection of its own from the {@link DataSource}, in autocommit: never in a caller's
 * transaction. The differences between databases are {@link JdbcDialect}'s; which thread runs a statement is the
 * caller's concern ({@link JdbcWorkers}).
 */
final class JdbcLockRepository {

    private final DataSource dataSource;
    private final String table;
    private final JdbcDialect dialect;
    private final String instance;
    private final long watchdogMicros;

    JdbcLockRepository(DataSource dataSource, String table, String instance, long watchdogMicros) {
        this.dataSource = dataSource;
        this.table = table;
        this.instance = instance;
        this.watchdogMicros = watchdogMicros;
        this.dialect = checkDatabase(dataSource, table);
    }

    /** Detects the dialect and reads the table once, so that a missing table fails the startup, not the first call. */
    private static JdbcDialect checkDatabase(DataSource dataSource, String table) {
        JdbcDialect dialect;
        try (Connection connection = dataSource.getConnection()) {
            try {
                dialect = JdbcDialect.of(connection);
            }
            catch (IllegalArgumentException ex) {
                throw new DistlockConfigurationException(ex.getMessage() + ".",
                        "Use a supported database for locks, or another distlock backend (distlock.backend).", ex);
            }
            try (PreparedStatement statement = connection.prepareStatement(
                    "SELECT lock_key, owner, instance, expires_at, token FROM " + table + " WHERE 1 = 0");
                    ResultSet ignored = statement.executeQuery()) {
                return dialect;
            }
            catch (SQLException ex) {
                throw new DistlockConfigurationException("distlock's lock table '" + table + "' is missing or not as "
                        + "its schema script makes it (" + connection.getMetaData().getDatabaseProductName() + "): "
                        + ex.getMessage(),
                        "Create the table with the script " + dialect.schemaScript() + " in the distlock-jdbc jar (by "
                        + "hand, Flyway or Liquibase), or set distlock.jdbc.initialize-schema=always to let distlock "
                        + "create it at startup. distlock.jdbc.table-name names the table ('" + table + "').", ex);
            }
        }
        catch (SQLException ex) {
            throw new DistlockConfigurationException("distlock could not connect to the database of its lock table '"
                    + table + "': " + ex.getMessage(),
                    "Check the DataSource (spring.datasource.*) and that the database is up.", ex);
        }
    }

    JdbcDialect dialect() {
        return dialect;
    }

    String table() {
        return table;
    }

    /** Work on one connection of the pool, in autocommit: never a caller's transaction. */
    interface SqlWork<T> {
        T run(Connection connection) throws SQLException;
    }

    <T> T withConnection(SqlWork<T> work) throws SQLException {
        try (Connection connection = dataSource.getConnection()) {
            boolean autoCommit = connection.getAutoCommit();
            if (!autoCommit) {
                // a pool configured without autocommit: each lock statement must still commit on its own at once
                connection.setAutoCommit(true);
            }
            try {
                return work.run(connection);
            }
            finally {
                if (!autoCommit) {
                    connection.setAutoCommit(false);
                }
            }
        }
    }

    private int update(String sql, Object... arguments) throws SQLException {
        return withConnection(connection -> {
            try (PreparedStatement statement = connection.prepareStatement(sql)) {
                bind(statement, arguments);
                return statement.executeUpdate();
            }
        });
    }

    private static void bind(PreparedStatement statement, Object... arguments) throws SQLException {
        for (int i = 0; i < arguments.length; i++) {
            if (arguments[i] instanceof Long value) {
                statement.setLong(i + 1, value);
            }
            else {
                statement.setString(i + 1, (String) arguments[i]);
            }
        }
    }

    /**
     * One try to take {@code grant}'s key (see {@link JdbcDialect#tryAcquire}): its token when taken, {@code null}
     * when another owner holds it.
     */
    Long tryAcquire(JdbcDialect.Grant grant) throws SQLException {
        return withConnection(connection -> dialect.tryAcquire(connection, table, grant));
    }

    /** Frees {@code owner}'s lock of {@code key}, if it still holds it (unexpired); whether it did. */
    boolean releaseRow(String key, String owner) throws SQLException {
        String now = dialect.now();
        return update("UPDATE " + table + " SET owner = NULL, instance = NULL, expires_at = " + now
                + " WHERE lock_key = ? AND owner = ? AND expires_at > " + now, key, owner) == 1;
    }

    /** Raises the token of {@code owner}'s unexpired row of {@code key}: the new token, {@code null} if not held. */
    Long raiseToken(String key, String owner) throws SQLException {
        String now = dialect.now();
        String raise = "UPDATE " + table + " SET token = GREATEST(token + 1, " + now + ") WHERE lock_key = ? AND "
                + "owner = ? AND expires_at > " + now;
        return withConnection(connection -> {
            try (PreparedStatement statement = connection.prepareStatement(raise)) {
                statement.setString(1, key);
                statement.setString(2, owner);
                if (statement.executeUpdate() == 0) {
                    return null;
                }
            }
            // only the holder raises the token, so the row's token is the one just issued, unless the lease
            // ran out in between: then the lock is no longer ours, and no token is handed out
            return dialect.token(connection, table, new JdbcDialect.Grant(key, owner, null, 0, true));
        });
    }

    /** Whether {@code owner} still holds {@code key}, by the database's clock. */
    boolean isHeld(String key, String owner) throws SQLException {
        String now = dialect.now();
        return withConnection(connection -> {
            try (PreparedStatement statement = connection.prepareStatement("SELECT 1 FROM " + table
                    + " WHERE lock_key = ? AND owner = ? AND expires_at > " + now)) {
                statement.setString(1, key);
                statement.setString(2, owner);
                try (ResultSet rows = statement.executeQuery()) {
                    return rows.next();
                }
            }
        });
    }

    /**
     * Renews every live row of this instance but those of {@code excluded} owners by the watchdog timeout, and adds
     * to {@code live} the owners of this instance's rows live after it: on PostgreSQL as the renewal's own answer
     * ({@code RETURNING owner}), elsewhere by a read that follows it on the same connection.
     *
     * @param sent what {@code changes} read before the renewal was sent
     * @param changes read between the renewal and the read that follows it
     * @return the value of {@code changes} the answer judges: {@code sent} on PostgreSQL, else the one read between
     * the two statements
     */
    long renew(Set<String> excluded, Set<String> live, long sent, LongSupplier changes) throws SQLException {
        String now = dialect.now();
        long[] judged = {sent};
        withConnection(connection -> {
            boolean returning = dialect == JdbcDialect.POSTGRESQL;
            try (PreparedStatement statement = connection.prepareStatement(dialect.renewal(table, excluded.size())
                    + (returning ? " RETURNING owner" : ""))) {
                JdbcDialect.bindRenewal(statement, instance, watchdogMicros, excluded);
                if (returning) {
                    readOwners(statement, live);
                    return null;
                }
                statement.executeUpdate();
            }
            judged[0] = changes.getAsLong();
            try (PreparedStatement statement = connection.prepareStatement("SELECT owner FROM " + table
                    + " WHERE instance = ? AND owner IS NOT NULL AND expires_at > " + now)) {
                statement.setString(1, instance);
                readOwners(statement, live);
            }
            return null;
        });
        return judged[0];
    }

    private static void readOwners(PreparedStatement statement, Set<String> owners) throws SQLException {
        try (ResultSet rows = statement.executeQuery()) {
            while (rows.next()) {
                owners.add(rows.getString(1));
            }
        }
    }
}

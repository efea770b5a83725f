package io.github.distlock.jdbc;

import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTimeoutException;
import java.sql.SQLTransientConnectionException;
import java.util.Locale;
import java.util.Set;

import org.jspecify.annotations.Nullable;

/**
 * The SQL that differs between databases: the database's clock, and how an acquisition that races another one for the
 * same new key reads as "held" instead of failing with a duplicate key. Every dialect's claim leaves a closed key
 * ({@code closed} not {@code NULL}) alone in the same statement: an open key costs nothing more.
 *
 * <p>Times are epoch microseconds computed by the database, stored as {@code BIGINT}: never the application's clock (so
 * skew between instances cannot matter), and never a {@code TIMESTAMP} without time zone (whose value would depend on
 * each connection's session time zone, so that two instances connected with different ones would disagree about
 * whether a lock has expired).
 */
enum JdbcDialect {

    /**
     * One statement: {@code INSERT ... ON CONFLICT DO UPDATE ... WHERE <free or expired> RETURNING token}. PostgreSQL
     * guarantees it an atomic outcome (inserted, updated, or neither) at READ COMMITTED, also against a concurrent
     * insert of the same key, which it waits for instead of failing.
     */
    POSTGRESQL("postgresql", "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)") {
        @Override
        @Nullable Long tryAcquire(Connection connection, String table, Grant grant) throws SQLException {
            String now = now();
            String sql = "INSERT INTO " + table + " AS l (lock_key, owner, instance, expires_at, token) VALUES (?, ?, ?, "
                    + now + " + ?, " + now + ") ON CONFLICT (lock_key) DO UPDATE SET owner = EXCLUDED.owner, "
                    + "instance = EXCLUDED.instance, expires_at = EXCLUDED.expires_at, "
                    + "token = GREATEST(l.token + 1, EXCLUDED.token) "
                    + "WHERE (l.owner IS NULL OR l.expires_at <= " + now + ") AND l.closed IS NULL RETURNING l.token";
            try (PreparedStatement statement = connection.prepareStatement(sql)) {
                grant.bind(statement, 1);
                try (ResultSet rows = statement.executeQuery()) {
                    return rows.next() ? rows.getLong(1) : null;
                }
            }
        }
    },

    /**
     * A conditional {@code UPDATE} takes a free or expired row; when none matched, {@code INSERT IGNORE} creates the
     * row, and a row another instance inserted first is ignored (0 rows), never an error. {@code INSERT IGNORE} also
     * turns a too-long value into a warning: keys are checked for length before they get here. Not one
     * {@code INSERT ... ON DUPLICATE KEY UPDATE}: with the driver's default (found rows), its row count cannot tell
     * "inserted" from "left alone".
     */
    MYSQL("mysql", "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))") {
        @Override
        @Nullable Long tryAcquire(Connection connection, String table, Grant grant) throws SQLException {
            if (takeOver(connection, table, grant)) {
                return tokenOfTaken(connection, table, grant);
            }
            String sql = "INSERT IGNORE INTO " + table + " (lock_key, owner, instance, expires_at, token) VALUES (?, ?, ?, "
                    + now() + " + ?, " + now() + ")";
            try (PreparedStatement statement = connection.prepareStatement(sql)) {
                grant.bind(statement, 1);
                if (statement.executeUpdate() == 0) {
                    return null;
                }
            }
            return tokenOfTaken(connection, table, grant);
        }
    },

    /**
     * A conditional {@code UPDATE}, then a plain {@code INSERT} whose duplicate-key error (another instance inserted the
     * key first) means "held". H2's {@code MERGE} would overwrite the other's row.
     */
    H2("h2", "CAST(EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) * 1000000 AS BIGINT)") {
        @Override
        @Nullable Long tryAcquire(Connection connection, String table, Grant grant) throws SQLException {
            if (takeOver(connection, table, grant)) {
                return tokenOfTaken(connection, table, grant);
            }
            String sql = "INSERT INTO " + table + " (lock_key, owner, instance, expires_at, token) VALUES (?, ?, ?, "
                    + now() + " + ?, " + now() + ")";
            try (PreparedStatement statement = connection.prepareStatement(sql)) {
                grant.bind(statement, 1);
                statement.executeUpdate();
            }
            catch (SQLException ex) {
                if (isDuplicateKey(ex)) {
                    return null;
                }
                throw ex;
            }
            return tokenOfTaken(connection, table, grant);
        }
    };

    /** What {@link #tryAcquire} returns for an unfenced acquisition: acquired, token not read. */
    static final Long NO_TOKEN = -1L;

    private final String scriptSuffix;
    private final String now;

    JdbcDialect(String scriptSuffix, String now) {
        this.scriptSuffix = scriptSuffix;
        this.now = now;
    }

    /** The database's clock as epoch microseconds, an SQL expression. */
    String now() {
        return now;
    }

    /** The schema script of this database in the jar. */
    String schemaScript() {
        return "io/github/distlock/jdbc/schema-" + scriptSuffix + ".sql";
    }

    /**
     * One try to take {@code grant}'s key, in the connection's own autocommit transaction.
     *
     * @return the fencing token (or {@link #NO_TOKEN} when the grant is unfenced and the dialect did not read one) when
     * acquired, {@code null} when another owner holds the key
     */
    abstract @Nullable Long tryAcquire(Connection connection, String table, Grant grant) throws SQLException;

    /**
     * The renewal of every live row of an instance by a lease from the database's now, leaving out the rows of
     * {@code excluded} owners (bound by {@link #bindRenewal}). PostgreSQL can append {@code RETURNING owner}.
     */
    String renewal(String table, int excluded) {
        return "UPDATE " + table + " SET expires_at = " + now + " + ? WHERE instance = ? AND owner IS NOT NULL AND "
                + "expires_at > " + now + ((excluded == 0) ? ""
                        : " AND owner NOT IN (" + String.join(", ", java.util.Collections.nCopies(excluded, "?")) + ")");
    }

    static void bindRenewal(PreparedStatement statement, String instance, long leaseMicros, Set<String> excluded)
            throws SQLException {
        statement.setLong(1, leaseMicros);
        statement.setString(2, instance);
        int index = 3;
        for (String owner : excluded) {
            statement.setString(index++, owner);
        }
    }

    /**
     * The token of a row this try has just taken (committed): a failure to read it must not read as "nothing taken",
     * so it is reported as {@link TakenThenFailed}.
     */
    Long tokenOfTaken(Connection connection, String table, Grant grant) throws SQLException {
        if (!grant.fenced()) {
            return NO_TOKEN;
        }
        try {
            return token(connection, table, grant);
        }
        catch (SQLException ex) {
            throw new TakenThenFailed(ex);
        }
    }

    /**
     * Takes the key's row if it is free or its holder's lease ran out (by the database's clock), and the key is not
     * closed.
     */
    boolean takeOver(Connection connection, String table, Grant grant) throws SQLException {
        String sql = "UPDATE " + table + " SET owner = ?, instance = ?, expires_at = " + now + " + ?, token = GREATEST("
                + "token + 1, " + now + ") WHERE lock_key = ? AND (owner IS NULL OR expires_at <= " + now
                + ") AND closed IS NULL";
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setString(1, grant.owner());
            statement.setString(2, grant.instance());
            statement.setLong(3, grant.leaseMicros());
            statement.setString(4, grant.key());
            return statement.executeUpdate() == 1;
        }
    }

    /** The token of the row {@code grant} just took; {@code null} when the lease already ran out. */
    @Nullable Long token(Connection connection, String table, Grant grant) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(
                "SELECT token FROM " + table + " WHERE lock_key = ? AND owner = ?")) {
            statement.setString(1, grant.key());
            statement.setString(2, grant.owner());
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next() ? rows.getLong(1) : null;
            }
        }
    }

    /** A unique-key violation: SQLState 23505 (PostgreSQL, H2), or MySQL/MariaDB's error 1062. */
    static boolean isDuplicateKey(SQLException ex) {
        return "23505".equals(ex.getSQLState()) || ex.getErrorCode() == 1062;
    }

    /**
     * A statement that lost a race for a row with another transaction and may simply be tried again: a deadlock or
     * serialization failure (SQLState class 40), a lock wait timeout (MySQL 1205, H2 50200, PostgreSQL's
     * {@code lock_timeout} 55P03) or H2's concurrent update (90131). None of them changed anything.
     */
    static boolean isConflict(SQLException ex) {
        if (ex instanceof TakenThenFailed) {
            return false;
        }
        String state = ex.getSQLState();
        return (state != null && state.startsWith("40")) || "55P03".equals(state) || ex.getErrorCode() == 1205
                || ex.getErrorCode() == 1213 || ex.getErrorCode() == 50200 || ex.getErrorCode() == 90131;
    }

    /**
     * Whether a failed statement may have committed all the same: the connection broke or the wait for the answer
     * timed out (SQLState class 08, a timeout, PostgreSQL's cancel 57014 or its operator intervention class 57,
     * MariaDB's interrupted query 70100, H2's broken connection 90067 or closed database 90098, an {@link IOException}
     * in the causes, no SQLState at all), or the try had already taken its row ({@link TakenThenFailed}). Any other
     * error is the database's answer to the statement, which in autocommit means it changed nothing.
     */
    static boolean isOutcomeUnknown(SQLException ex) {
        if (ex instanceof TakenThenFailed || ex instanceof SQLTimeoutException
                || ex instanceof SQLTransientConnectionException || ex instanceof SQLNonTransientConnectionException
                || ex instanceof SQLRecoverableException) {
            return true;
        }
        for (Throwable cause = ex.getCause(); cause != null && cause != cause.getCause(); cause = cause.getCause()) {
            if (cause instanceof IOException) {
                return true;
            }
        }
        String state = ex.getSQLState();
        return state == null || state.isEmpty() || state.startsWith("08") || state.startsWith("57")
                || state.equals("70100") || ex.getErrorCode() == 90067 || ex.getErrorCode() == 90098;
    }

    /**
     * A try that took (and committed) its row and then failed reading the row's token: the row is held by an owner
     * nobody will be told about, and must be given back.
     */
    static final class TakenThenFailed extends SQLException {

        TakenThenFailed(SQLException cause) {
            super("the lock's row was taken, then reading its token failed: " + cause.getMessage(), cause.getSQLState(),
                    cause.getErrorCode(), cause);
        }
    }

    /**
     * The dialect of the database {@code connection} is connected to, from its metadata.
     *
     * @throws IllegalArgumentException naming the product when it is none of PostgreSQL, MySQL, MariaDB and H2
     */
    static JdbcDialect of(Connection connection) throws SQLException {
        String product = connection.getMetaData().getDatabaseProductName();
        String name = (product != null) ? product.toLowerCase(Locale.ROOT) : "";
        if (name.contains("postgres")) {
            return POSTGRESQL;
        }
        if (name.contains("mysql") || name.contains("mariadb")) {
            return MYSQL;
        }
        if (name.equals("h2")) {
            return H2;
        }
        throw new IllegalArgumentException("The jdbc lock backend supports PostgreSQL, MySQL, MariaDB and H2; the "
                + "DataSource is connected to '" + product + "'");
    }

    /**
     * What an acquisition writes into its row.
     *
     * @param key the lock's key
     * @param owner the owner's id in the table: {@code <instance>:<owner id>}
     * @param instance the provider instance that renews it, or {@code null} for a fixed lease
     * @param leaseMicros how long after the database's now the lock expires
     * @param fenced whether the token must be read
     */
    record Grant(String key, String owner, @Nullable String instance, long leaseMicros, boolean fenced) {

        /** Binds key, owner, instance and lease, in that order, from {@code index} on. */
        void bind(PreparedStatement statement, int index) throws SQLException {
            statement.setString(index, key);
            statement.setString(index + 1, owner);
            statement.setString(index + 2, instance);
            statement.setLong(index + 3, leaseMicros);
        }
    }
}

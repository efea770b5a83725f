package io.github.distlock.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Locale;

import javax.sql.DataSource;

import org.springframework.core.io.ByteArrayResource;
import org.springframework.jdbc.datasource.init.ScriptException;
import org.springframework.jdbc.datasource.init.ScriptUtils;

/**
 * The lock table's schema scripts in this jar (the table {@code <table>}, its index {@code <table>_instance}, and the
 * table {@code <table>_peers} of the instances that announced themselves), {@code io/github/distlock/jdbc/schema-<database>.sql} ({@code postgresql},
 * {@code mysql} for MySQL and MariaDB, {@code h2}), and a way to apply them. The scripts create the table
 * {@value JdbcLockOptions#DEFAULT_TABLE_NAME} only if it does not exist; apply them by hand, with Flyway or Liquibase
 * (replacing the table name if you use another), or let {@code distlock.jdbc.initialize-schema} do it.
 */
public final class JdbcLockSchema {

    private JdbcLockSchema() {
    }

    /**
     * The classpath location of the schema script for the database {@code dataSource} is connected to.
     *
     * @throws IllegalArgumentException when the database is none this backend supports
     */
    public static String scriptFor(DataSource dataSource) {
        try (Connection connection = dataSource.getConnection()) {
            return JdbcDialect.of(connection).schemaScript();
        }
        catch (SQLException ex) {
            throw new JdbcLockException("Could not connect to detect the database for distlock's schema script", ex);
        }
    }

    /**
     * Creates the lock table {@code tableName} (its index, and its table of instances {@code <tableName>_peers}) unless
     * they exist, with the script for the database
     * {@code dataSource} is connected to, {@value JdbcLockOptions#DEFAULT_TABLE_NAME} replaced by {@code tableName}.
     * Safe to run from several instances starting at once: on PostgreSQL they queue on an advisory lock of the table's
     * name; elsewhere the database serializes the DDL, and an "already exists" is accepted when the table is there.
     *
     * @throws IllegalArgumentException when {@code tableName} is not a plain (optionally schema-qualified) name
     * @throws JdbcLockException when the script fails
     */
    public static void create(DataSource dataSource, String tableName) {
        // checks the name: it goes into the script as it is
        JdbcLockOptions.defaults().withTableName(tableName);
        try (Connection connection = dataSource.getConnection()) {
            JdbcDialect dialect = JdbcDialect.of(connection);
            String location = dialect.schemaScript();
            // the index is named after the table's own name: with a schema-qualified one, without its schema
            String script = read(location)
                    .replace(JdbcLockOptions.DEFAULT_TABLE_NAME + "_instance", "{index}")
                    .replace(JdbcLockOptions.DEFAULT_TABLE_NAME, tableName)
                    .replace("{index}", tableName.substring(tableName.indexOf('.') + 1) + "_instance");
            ByteArrayResource resource = new ByteArrayResource(script.getBytes(StandardCharsets.UTF_8), location);
            boolean autoCommit = connection.getAutoCommit();
            try {
                if (dialect == JdbcDialect.POSTGRESQL) {
                    createSerialized(connection, tableName, resource);
                }
                else {
                    createTolerant(connection, tableName, resource);
                }
            }
            finally {
                connection.setAutoCommit(autoCommit);
            }
        }
        catch (SQLException ex) {
            throw new JdbcLockException("Could not create distlock's lock table '" + tableName + "'", ex);
        }
    }

    /**
     * PostgreSQL's {@code IF NOT EXISTS} is not safe against a concurrent creation of the same name: both see no table,
     * and the second fails on the catalog's unique index ({@code pg_type}). Instances starting together therefore
     * queue on an advisory lock of the table's name, held by the transaction that runs the script (DDL is
     * transactional there): the next one in sees the table committed and skips it.
     */
    private static void createSerialized(Connection connection, String tableName, ByteArrayResource script)
            throws SQLException {
        connection.setAutoCommit(false);
        try {
            try (PreparedStatement lock = connection.prepareStatement("SELECT pg_advisory_xact_lock(hashtext(?))")) {
                lock.setString(1, "distlock-schema:" + tableName.toLowerCase(Locale.ROOT));
                lock.executeQuery().close();
            }
            ScriptUtils.executeSqlScript(connection, script);
            connection.commit();
        }
        catch (SQLException | RuntimeException ex) {
            connection.rollback();
            throw ex;
        }
    }

    /**
     * MySQL/MariaDB and H2 serialize DDL of one name themselves (metadata locks; one database in one JVM), so
     * {@code IF NOT EXISTS} holds there; should a concurrent creation still surface as "already exists", the table the
     * other instance created is checked and used.
     */
    private static void createTolerant(Connection connection, String tableName, ByteArrayResource script)
            throws SQLException {
        connection.setAutoCommit(true);
        try {
            ScriptUtils.executeSqlScript(connection, script);
        }
        catch (ScriptException ex) {
            SQLException cause = sqlCause(ex);
            if (cause == null || !isAlreadyExists(cause) || !tableExists(connection, tableName)) {
                throw ex;
            }
        }
    }

    private static SQLException sqlCause(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof SQLException sql) {
                return sql;
            }
        }
        return null;
    }

    /** Table or index of that name exists: SQLState 42S01/42S11 or MySQL 1050/1061, H2 42101/42111. */
    private static boolean isAlreadyExists(SQLException ex) {
        String state = ex.getSQLState();
        int code = ex.getErrorCode();
        return "42S01".equals(state) || "42S11".equals(state) || code == 1050 || code == 1061 || code == 42101
                || code == 42111;
    }

    private static boolean tableExists(Connection connection, String tableName) {
        try (PreparedStatement locks = connection.prepareStatement(JdbcLockRepository.lockTableCheck(tableName));
                PreparedStatement peers = connection.prepareStatement(JdbcLockRepository.peerTableCheck(tableName))) {
            locks.executeQuery().close();
            peers.executeQuery().close();
            return true;
        }
        catch (SQLException ex) {
            return false;
        }
    }

    private static String read(String location) {
        try (InputStream in = JdbcLockSchema.class.getClassLoader().getResourceAsStream(location)) {
            if (in == null) {
                throw new IllegalStateException("Schema script " + location + " is missing from the class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }
}

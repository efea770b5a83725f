package io.github.distlock.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;

import javax.sql.DataSource;

import org.springframework.core.io.ByteArrayResource;
import org.springframework.jdbc.datasource.init.ScriptUtils;

/**
 * The lock table's schema scripts in this jar, {@code io/github/distlock/jdbc/schema-<database>.sql} ({@code postgresql},
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
     * Creates the lock table {@code tableName} (and its index) unless it exists, with the script for the database
     * {@code dataSource} is connected to, {@value JdbcLockOptions#DEFAULT_TABLE_NAME} replaced by {@code tableName}.
     *
     * @throws IllegalArgumentException when {@code tableName} is not a plain (optionally schema-qualified) name
     * @throws JdbcLockException when the script fails
     */
    public static void create(DataSource dataSource, String tableName) {
        // checks the name: it goes into the script as it is
        JdbcLockOptions.defaults().withTableName(tableName);
        try (Connection connection = dataSource.getConnection()) {
            String location = JdbcDialect.of(connection).schemaScript();
            // the index is named after the table's own name: with a schema-qualified one, without its schema
            String script = read(location)
                    .replace(JdbcLockOptions.DEFAULT_TABLE_NAME + "_instance", "{index}")
                    .replace(JdbcLockOptions.DEFAULT_TABLE_NAME, tableName)
                    .replace("{index}", tableName.substring(tableName.indexOf('.') + 1) + "_instance");
            boolean autoCommit = connection.getAutoCommit();
            connection.setAutoCommit(true);
            try {
                ScriptUtils.executeSqlScript(connection, new ByteArrayResource(script.getBytes(StandardCharsets.UTF_8),
                        location));
            }
            finally {
                connection.setAutoCommit(autoCommit);
            }
        }
        catch (SQLException ex) {
            throw new JdbcLockException("Could not create distlock's lock table '" + tableName + "'", ex);
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

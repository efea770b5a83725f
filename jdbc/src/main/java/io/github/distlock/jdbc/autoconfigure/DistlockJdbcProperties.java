package io.github.distlock.jdbc.autoconfigure;

import java.time.Duration;

import io.github.distlock.jdbc.JdbcLockOptions;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.sql.init.DatabaseInitializationMode;

/**
 * Settings of the jdbc lock backend ({@code distlock.jdbc.*}). How long a dead holder's watchdog lock lives on is
 * {@code distlock.watchdog-timeout}, as for every backend.
 */
@ConfigurationProperties(prefix = "distlock.jdbc")
public class DistlockJdbcProperties {

    /**
     * The lock table, optionally schema-qualified (schema.table): letters, digits and underscores.
     */
    private String tableName = JdbcLockOptions.DEFAULT_TABLE_NAME;

    /**
     * Whether distlock creates its lock table at startup (only if it does not exist) with the schema script of the
     * database in the distlock-jdbc jar: embedded (only for an embedded database such as an in-memory H2), always, or
     * never (create it yourself from io/github/distlock/jdbc/schema-<database>.sql, with Flyway, Liquibase or by
     * hand).
     */
    private DatabaseInitializationMode initializeSchema = DatabaseInitializationMode.EMBEDDED;

    /** The first pause of a waiting caller between two tries; pauses double up to max-poll-interval. */
    private Duration minPollInterval = JdbcLockOptions.defaults().minPollInterval();

    /** The longest pause of a waiting caller between two tries: each try is a statement on the database. */
    private Duration maxPollInterval = JdbcLockOptions.defaults().maxPollInterval();

    /** Threads that run the lock's statements; each uses a connection of the DataSource's pool while it runs one. */
    private int threads = JdbcLockOptions.defaults().threads();

    /** PostgreSQL's wake-up of other instances' waiters on a release. */
    private final Notify notify = new Notify();

    public String getTableName() {
        return tableName;
    }

    public void setTableName(String tableName) {
        this.tableName = tableName;
    }

    public DatabaseInitializationMode getInitializeSchema() {
        return initializeSchema;
    }

    public void setInitializeSchema(DatabaseInitializationMode initializeSchema) {
        this.initializeSchema = initializeSchema;
    }

    public Duration getMinPollInterval() {
        return minPollInterval;
    }

    public void setMinPollInterval(Duration minPollInterval) {
        this.minPollInterval = minPollInterval;
    }

    public Duration getMaxPollInterval() {
        return maxPollInterval;
    }

    public void setMaxPollInterval(Duration maxPollInterval) {
        this.maxPollInterval = maxPollInterval;
    }

    public int getThreads() {
        return threads;
    }

    public void setThreads(int threads) {
        this.threads = threads;
    }

    public Notify getNotify() {
        return notify;
    }

    /** Settings of PostgreSQL's wake-up of waiters ({@code distlock.jdbc.notify.*}). */
    public static class Notify {

        /**
         * On PostgreSQL, whether a release wakes the waiters of other instances at once (LISTEN/NOTIFY on one
         * connection per instance, opened beside a HikariCP pool or else borrowed from the pool, which then needs a
         * maximum of at least 3) instead of leaving them to their next poll. Ignored on other databases.
         */
        private boolean enabled = true;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }

    /** These settings as the provider's options, checked (an invalid value fails naming its property). */
    JdbcLockOptions toOptions(Duration watchdogTimeout) {
        return new JdbcLockOptions(tableName, watchdogTimeout, minPollInterval, maxPollInterval, threads,
                notify.isEnabled());
    }
}

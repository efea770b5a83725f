package io.github.distlock.jdbc;

import java.time.Duration;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * How a {@link JdbcLockProvider} uses its table.
 *
 * @param tableName the lock table, optionally schema-qualified ({@code locks.distlock_lock}); letters, digits and
 * underscores only, so that it can be put into SQL as it is
 * @param watchdogTimeout how long a watchdog lock outlives a holder that stopped renewing it; renewed every third of it
 * @param minPollInterval the first pause of a waiter between two tries
 * @param maxPollInterval the longest pause of a waiter between two tries: pauses double from the first up to this one,
 * each a random time between half and all of it, so that waiters of one key don't poll in step
 * @param threads threads that run the lock's statements (acquisitions, releases); each needs a connection of the pool
 * while it runs one
 */
public record JdbcLockOptions(String tableName, Duration watchdogTimeout, Duration minPollInterval,
        Duration maxPollInterval, int threads) {

    /** The default table name, the one the schema scripts create. */
    public static final String DEFAULT_TABLE_NAME = "distlock_lock";

    private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)?");

    /** Checks every value, naming the property that sets it. */
    public JdbcLockOptions {
        Objects.requireNonNull(tableName, "tableName");
        if (!IDENTIFIER.matcher(tableName).matches() || tableName.length() > 60) {
            throw new IllegalArgumentException("distlock.jdbc.table-name must be a table name of letters, digits and "
                    + "underscores, optionally schema-qualified (schema.table), at most 60 characters; was '" + tableName
                    + "'");
        }
        if (watchdogTimeout == null || watchdogTimeout.toMillis() < 100) {
            throw new IllegalArgumentException("distlock.watchdog-timeout must be at least 100ms, was " + watchdogTimeout);
        }
        if (minPollInterval == null || minPollInterval.toMillis() < 1) {
            throw new IllegalArgumentException("distlock.jdbc.min-poll-interval must be at least 1ms, was "
                    + minPollInterval);
        }
        if (maxPollInterval == null || maxPollInterval.compareTo(minPollInterval) < 0) {
            throw new IllegalArgumentException("distlock.jdbc.max-poll-interval must be at least the min-poll-interval ("
                    + minPollInterval + "), was " + maxPollInterval);
        }
        if (threads < 1) {
            throw new IllegalArgumentException("distlock.jdbc.threads must be at least 1, was " + threads);
        }
    }

    /**
     * The defaults: table {@value #DEFAULT_TABLE_NAME}, watchdog timeout 30 s (as on Redis), polls from 5 ms up to
     * 100 ms, 4 threads.
     */
    public static JdbcLockOptions defaults() {
        return new JdbcLockOptions(DEFAULT_TABLE_NAME, Duration.ofSeconds(30), Duration.ofMillis(5),
                Duration.ofMillis(100), 4);
    }

    /** These options with another table. */
    public JdbcLockOptions withTableName(String tableName) {
        return new JdbcLockOptions(tableName, watchdogTimeout, minPollInterval, maxPollInterval, threads);
    }

    /** These options with another watchdog timeout. */
    public JdbcLockOptions withWatchdogTimeout(Duration watchdogTimeout) {
        return new JdbcLockOptions(tableName, watchdogTimeout, minPollInterval, maxPollInterval, threads);
    }

    /** These options with other poll intervals. */
    public JdbcLockOptions withPollIntervals(Duration minPollInterval, Duration maxPollInterval) {
        return new JdbcLockOptions(tableName, watchdogTimeout, minPollInterval, maxPollInterval, threads);
    }

    /** These options with another number of threads. */
    public JdbcLockOptions withThreads(int threads) {
        return new JdbcLockOptions(tableName, watchdogTimeout, minPollInterval, maxPollInterval, threads);
    }
}

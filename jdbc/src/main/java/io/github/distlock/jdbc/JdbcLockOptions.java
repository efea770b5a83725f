package io.github.distlock.jdbc;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

import io.github.distlock.spi.LockDurations;

/**
 * How a {@link JdbcLockProvider} uses its table.
 *
 * @param tableName the lock table, optionally schema-qualified ({@code locks.distlock_lock}); letters, digits and
 * underscores only, so that it can be put into SQL as it is (unquoted); the table's own name at most
 * {@link #MAX_TABLE_NAME_LENGTH} (54) characters (its index is named {@code <table>_instance}, which must fit the 63
 * characters of a PostgreSQL identifier and the 64 of MySQL's), the schema's at most 63; no common SQL reserved word
 * ({@code order}, {@code user}, {@code lock}, ...), which would need quoting
 * @param watchdogTimeout how long a watchdog lock outlives a holder that stopped renewing it; renewed every third of it
 * @param minPollInterval the first pause of a waiter between two tries
 * @param maxPollInterval the longest pause of a waiter between two tries: pauses double from the first up to this one,
 * each a random time between half and all of it, so that waiters of one key don't poll in step
 * @param threads threads that run the lock's statements (acquisitions, releases); each needs a connection of the pool
 * while it runs one
 * @param notifyReleases on PostgreSQL, whether a release wakes the other instances' waiters at once ({@code LISTEN/NOTIFY}, one
 * connection of the pool held per provider) instead of leaving them to their next poll; ignored on other databases
 */
public record JdbcLockOptions(String tableName, Duration watchdogTimeout, Duration minPollInterval,
        Duration maxPollInterval, int threads, boolean notifyReleases) {

    /** The options with PostgreSQL's notifications on. */
    public JdbcLockOptions(String tableName, Duration watchdogTimeout, Duration minPollInterval,
            Duration maxPollInterval, int threads) {
        this(tableName, watchdogTimeout, minPollInterval, maxPollInterval, threads, true);
    }

    /** The default table name, the one the schema scripts create. */
    public static final String DEFAULT_TABLE_NAME = "distlock_lock";

    /**
     * The longest table name (without its schema): the index {@code <table>_instance} must fit PostgreSQL's 63
     * characters (a longer name is silently truncated there) and MySQL's 64.
     */
    public static final int MAX_TABLE_NAME_LENGTH = 63 - "_instance".length();

    private static final int MAX_IDENTIFIER_LENGTH = 63;

    private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)?");

    /**
     * Words reserved in PostgreSQL, MySQL/MariaDB or H2 (or in several) that make a plausible table or schema name:
     * unquoted, as the backend writes the name into its SQL, they fail every statement. Not the full lists: the common
     * ones, so that the mistake is named at startup instead of as a syntax error.
     */
    private static final Set<String> RESERVED = Set.of("all", "and", "any", "as", "between", "by", "case", "check",
            "column", "constraint", "create", "cross", "current_date", "current_time", "current_timestamp",
            "current_user", "default", "delete", "desc", "distinct", "drop", "else", "end", "except", "exists", "false",
            "fetch", "for", "foreign", "from", "full", "grant", "group", "having", "in", "index", "inner", "insert",
            "intersect", "into", "is", "join", "key", "left", "like", "limit", "lock", "natural", "not", "null", "offset",
            "on", "or", "order", "outer", "primary", "references", "right", "row", "rows", "select", "session_user",
            "set", "table", "then", "to", "true", "union", "unique", "update", "user", "using", "values", "when", "where",
            "window", "with");

    /** Checks every value, naming the property that sets it. */
    public JdbcLockOptions {
        Objects.requireNonNull(tableName, "tableName");
        checkTableName(tableName);
        LockDurations.checkedBetween("distlock.watchdog-timeout", watchdogTimeout, LockDurations.MIN_WATCHDOG_TIMEOUT,
                LockDurations.MAX_WATCHDOG_TIMEOUT);
        // a pause is never longer than what is left of the wait, so the longest intervals need no other bound
        minPollInterval = LockDurations.checkedPositive("distlock.jdbc.min-poll-interval", minPollInterval);
        if (maxPollInterval == null || maxPollInterval.compareTo(minPollInterval) < 0) {
            throw new IllegalArgumentException("distlock.jdbc.max-poll-interval must be at least the min-poll-interval ("
                    + minPollInterval + "), was " + maxPollInterval);
        }
        maxPollInterval = LockDurations.capped(maxPollInterval);
        if (threads < 1) {
            throw new IllegalArgumentException("distlock.jdbc.threads must be at least 1, was " + threads);
        }
    }

    private static void checkTableName(String tableName) {
        if (!IDENTIFIER.matcher(tableName).matches()) {
            throw new IllegalArgumentException("distlock.jdbc.table-name must be a table name of letters, digits and "
                    + "underscores (not starting with a digit), optionally schema-qualified (schema.table); was '"
                    + tableName + "'");
        }
        int dot = tableName.indexOf('.');
        String table = tableName.substring(dot + 1);
        if (table.length() > MAX_TABLE_NAME_LENGTH) {
            throw new IllegalArgumentException("distlock.jdbc.table-name '" + tableName + "' is too long: the table's "
                    + "name may have at most " + MAX_TABLE_NAME_LENGTH + " characters (its index '" + table
                    + "_instance' must fit the database's identifiers: 63 characters on PostgreSQL, 64 on MySQL), was "
                    + table.length());
        }
        if (dot > MAX_IDENTIFIER_LENGTH) {
            throw new IllegalArgumentException("distlock.jdbc.table-name '" + tableName + "': the schema's name may have "
                    + "at most " + MAX_IDENTIFIER_LENGTH + " characters, was " + dot);
        }
        for (String part : tableName.split("\\.")) {
            if (RESERVED.contains(part.toLowerCase(Locale.ROOT))) {
                throw new IllegalArgumentException("distlock.jdbc.table-name '" + tableName + "' uses the SQL reserved "
                        + "word '" + part + "', which the backend's statements cannot use unquoted: choose another name "
                        + "(the default is " + DEFAULT_TABLE_NAME + ")");
            }
        }
    }

    /**
     * The defaults: table {@value #DEFAULT_TABLE_NAME}, watchdog timeout 30 s (as on Redis), polls from 5 ms up to
     * 100 ms, 4 threads, PostgreSQL's notifications on.
     */
    public static JdbcLockOptions defaults() {
        return new JdbcLockOptions(DEFAULT_TABLE_NAME, Duration.ofSeconds(30), Duration.ofMillis(5),
                Duration.ofMillis(100), 4);
    }

    /** These options with another table. */
    public JdbcLockOptions withTableName(String tableName) {
        return new JdbcLockOptions(tableName, watchdogTimeout, minPollInterval, maxPollInterval, threads, notifyReleases);
    }

    /** These options with another watchdog timeout. */
    public JdbcLockOptions withWatchdogTimeout(Duration watchdogTimeout) {
        return new JdbcLockOptions(tableName, watchdogTimeout, minPollInterval, maxPollInterval, threads, notifyReleases);
    }

    /** These options with other poll intervals. */
    public JdbcLockOptions withPollIntervals(Duration minPollInterval, Duration maxPollInterval) {
        return new JdbcLockOptions(tableName, watchdogTimeout, minPollInterval, maxPollInterval, threads, notifyReleases);
    }

    /** These options with PostgreSQL's notifications on or off. */
    public JdbcLockOptions withNotifyReleases(boolean notifyReleases) {
        return new JdbcLockOptions(tableName, watchdogTimeout, minPollInterval, maxPollInterval, threads, notifyReleases);
    }

    /** These options with another number of threads. */
    public JdbcLockOptions withThreads(int threads) {
        return new JdbcLockOptions(tableName, watchdogTimeout, minPollInterval, maxPollInterval, threads, notifyReleases);
    }
}

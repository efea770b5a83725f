package io.github.distlock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import javax.sql.DataSource;

import io.github.distlock.DistlockConfigurationException;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;

/**
 * Locks as rows of one table in the application's own database (PostgreSQL, MySQL/MariaDB, H2; detected from the
 * connection), one row per key:
 * <ul>
 * <li><b>owner</b> {@code <instance>:<owner id>} while held, {@code NULL} when free; every statement that changes a held
 * row names its owner ({@code WHERE lock_key = ? AND owner = ?}), so a holder whose lease ran out can release or renew
 * nothing of the next holder's;</li>
 * <li><b>expires_at</b> computed by the database's clock, never the application's, so that clock skew between
 * instances cannot matter; a lock whose expiry has passed is free for the next caller, whether or not its holder
 * lives;</li>
 * <li><b>token</b>, the key's fencing token: a released lock keeps its row (marked free) instead of being deleted, and
 * the statement that grants the lock raises the token in the same row, atomically with the grant: tokens grow per key
 * across holders without a second table or round trip. The new token is also at least the database's clock in
 * microseconds, so that a row deleted by hand (say, by a clean-up of keys no longer used) starts above every token
 * it issued, as long as the database's clock does not go back.</li>
 * </ul>
 *
 * <p>A concurrent acquisition of the same key reads as "held", never as an error, in each database's default isolation
 * level (see {@link JdbcDialect}). Each statement runs on a connection of its own taken from the {@link DataSource}
 * itself, in its own autocommit transaction, on this provider's threads: never in a transaction of the caller's, so
 * that a caller's rollback cannot undo an acquisition and a lock row never waits for a caller's commit. Mind the pool's
 * size: a caller in a transaction holds one connection while the lock needs another.
 *
 * <p>Watchdog locks ({@link LockRequest#watchdog()}) are renewed by one statement per period for all of this
 * provider's locks ({@code UPDATE ... WHERE instance = ?}), every third of the watchdog timeout; a renewal that finds
 * a lock no longer this provider's reports it through {@link LockHandle#whenLost} once, and so does a renewal that has
 * failed for a whole watchdog timeout (by then the database has expired the lock). A holder that dies stops renewing:
 * its lock expires within the watchdog timeout. Waiters poll with a doubling, jittered pause between tries, and give up
 * at the end of their wait.
 *
 * <p>Lock types: {@link LockType#REENTRANT}, fenced or not. {@code FAIR} would need a queue of waiters in the table and
 * {@code READ}/{@code WRITE} several holders per key with their own expiries; neither is offered, and asking for them
 * fails with an {@link IllegalArgumentException}.
 *
 * <p>The table must exist: the constructor checks it (and the connection) and fails with a
 * {@link DistlockConfigurationException} naming the schema script in this jar
 * ({@code io/github/distlock/jdbc/schema-<database>.sql}) and the property that creates it.
 */
public class JdbcLockProvider implements LockProvider, AutoCloseable {

    private static final Log logger = LogFactory.getLog(JdbcLockProvider.class);

    /** The longest key the table holds ({@code lock_key VARCHAR(255)}), in UTF-16 chars ({@link String#length()}). */
    public static final int MAX_KEY_LENGTH = 255;

    private static final int HELD = 0;
    private static final int RELEASING = 1;
    private static final int LOSS_REPORTED = 2;

    private final DataSource dataSource;
    private final JdbcLockOptions options;
    private final String table;
    private final JdbcDialect dialect;
    /** This provider's identity in the table: owners are {@code <instance>:<owner id>}, watchdog rows carry it. */
    private final String instance = UUID.randomUUID().toString();
    private final long watchdogMicros;
    private final long watchdogNanos;

    /** Runs the statements of acquisitions and releases, and the pauses between a waiter's tries. */
    private final ScheduledThreadPoolExecutor workers;
    /**
     * Renews the watchdog locks, and checks for renewals overdue: threads of their own, so that a queue of waiters'
     * tries never delays a renewal.
     */
    private final ScheduledThreadPoolExecutor renewer;
    /** Loss reports: a callback that blocks must not hold up renewals. */
    private final ExecutorService callbacks;

    /** Watchdog locks this provider renews, by owner. */
    private final Map<String, JdbcLockHandle> watched = new ConcurrentHashMap<>();
    /** Counts every change of {@link #watched}; see {@link #renew()}. */
    private final AtomicLong changes = new AtomicLong();
    /** Watchdog acquisitions whose statement may have written a row that is not in {@link #watched} yet. */
    private final AtomicInteger inFlight = new AtomicInteger();
    private final Set<Attempt> pending = ConcurrentHashMap.newKeySet();
    private volatile SQLException lastRenewalFailure;
    private volatile boolean closed;

    /** A provider with the {@linkplain JdbcLockOptions#defaults() default options}. */
    public JdbcLockProvider(DataSource dataSource) {
        this(dataSource, JdbcLockOptions.defaults());
    }

    /**
     * Connects once to detect the database and check the table.
     *
     * @param dataSource the database; a {@link TransactionAwareDataSourceProxy} is unwrapped, so that no statement
     * of the lock ever joins a caller's transaction
     * @throws DistlockConfigurationException when the database cannot be reached, is not one this backend supports, or
     * has no lock table as the schema script makes it
     */
    public JdbcLockProvider(DataSource dataSource, JdbcLockOptions options) {
        this.dataSource = (dataSource instanceof TransactionAwareDataSourceProxy proxy) ? proxy.getTargetDataSource()
                : dataSource;
        this.options = options;
        this.table = options.tableName();
        this.watchdogNanos = options.watchdogTimeout().toNanos();
        this.watchdogMicros = TimeUnit.NANOSECONDS.toMicros(watchdogNanos);
        this.dialect = checkDatabase(this.dataSource, table);
        this.workers = new ScheduledThreadPoolExecutor(options.threads(), daemons("distlock-jdbc"));
        this.workers.setRemoveOnCancelPolicy(true);
        this.renewer = new ScheduledThreadPoolExecutor(2, daemons("distlock-jdbc-renewal"));
        long period = Math.max(1, watchdogNanos / 3);
        this.renewer.scheduleWithFixedDelay(this::renewSafely, period, period, TimeUnit.NANOSECONDS);
        // on the second thread: a renewal statement that hangs (a database that stopped answering, a driver without
        // a socket timeout) must not keep the holders from being told when their leases have run out
        long check = Math.max(TimeUnit.MILLISECONDS.toNanos(10), watchdogNanos / 10);
        this.renewer.scheduleWithFixedDelay(this::reportOverdueSafely, check, check, TimeUnit.NANOSECONDS);
        this.callbacks = Executors.newCachedThreadPool(daemons("distlock-jdbc-callback"));
    }

    private static java.util.concurrent.ThreadFactory daemons(String name) {
        AtomicInteger count = new AtomicInteger();
        return task -> {
            Thread thread = new Thread(task, name + "-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
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

    /** {@link LockType#REENTRANT}, fenced or not: the only type one row per key can honour (see the class comment). */
    @Override
    public boolean supports(LockType type, boolean fenced) {
        return type == LockType.REENTRANT;
    }

    @Override
    public CompletableFuture<LockHandle> acquire(LockRequest request) {
        if (!supports(request.type(), request.fenced())) {
            throw new IllegalArgumentException("The jdbc lock backend takes REENTRANT locks only, not " + request.type()
                    + " (one row per key has no queue for FAIR nor room for several READ holders)");
        }
        checkKey(request.key());
        if (closed) {
            return CompletableFuture.failedFuture(new IllegalStateException("JdbcLockProvider is closed"));
        }
        Attempt attempt = new Attempt(request);
        pending.add(attempt);
        attempt.future.whenComplete((handle, failure) -> pending.remove(attempt));
        attempt.schedule(0);
        return attempt.future;
    }

    /**
     * Keys are counted in UTF-16 chars, as Java and H2 count them: PostgreSQL counts code points (never more), and
     * MySQL's {@code VARBINARY(1020)} holds 255 of them in UTF-8 (at most 3 bytes each, 4 for a pair).
     */
    private static void checkKey(String key) {
        if (key.length() > MAX_KEY_LENGTH) {
            throw new IllegalArgumentException("Lock key is " + key.length() + " characters long; the jdbc backend's "
                    + "table keeps keys of at most " + MAX_KEY_LENGTH + " (column lock_key): '" + key.substring(0, 40)
                    + "...'");
        }
    }

    /** The dialect detected from the connection (for tests and diagnostics). */
    JdbcDialect dialect() {
        return dialect;
    }

    /** This provider's identity in the table's {@code owner} and {@code instance} columns. */
    public String instanceId() {
        return instance;
    }

    /** The table the locks live in. */
    public String tableName() {
        return table;
    }

    /** Watchdog locks renewed right now (for tests and diagnostics). */
    int watchedLocks() {
        return watched.size();
    }

    // ---------------------------------------------------------------- statements

    /** Work on one connection of the pool, in autocommit: never a caller's transaction. */
    private interface SqlWork<T> {
        T run(Connection connection) throws SQLException;
    }

    private <T> T withConnection(SqlWork<T> work) throws SQLException {
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

    /** Frees {@code owner}'s lock of {@code key}, if it still holds it (unexpired); whether it did. */
    private boolean releaseRow(String key, String owner) throws SQLException {
        String now = dialect.now();
        return update("UPDATE " + table + " SET owner = NULL, instance = NULL, expires_at = " + now
                + " WHERE lock_key = ? AND owner = ? AND expires_at > " + now, key, owner) == 1;
    }

    /**
     * Frees whatever {@code owner} may hold of {@code key} after a statement whose outcome is unknown (it failed, or its
     * caller stopped waiting): again until a release got an answer. A fixed lease is given up on once it has passed
     * (the row has expired by then); a watchdog row is tried until answered, because this provider's batched renewal
     * keeps renewing it as long as it is live. Only this owner's row can match, so it can free nothing of anyone
     * else's.
     */
    private void giveBack(String key, String owner, long leaseNanos, boolean watchdog) {
        long deadline = System.nanoTime() + leaseNanos;
        long period = Math.max(TimeUnit.MILLISECONDS.toNanos(50), Math.min(TimeUnit.SECONDS.toNanos(1), leaseNanos / 10));
        Runnable[] task = new Runnable[1];
        task[0] = () -> {
            try {
                if (releaseRow(key, owner)) {
                    logger.info("Gave back lock '" + key + "', taken for a call that had already failed or stopped waiting");
                }
            }
            catch (SQLException | RuntimeException ex) {
                if (watchdog || System.nanoTime() - deadline < 0) {
                    scheduleQuietly(task[0], period);
                }
            }
        };
        scheduleQuietly(task[0], 0);
    }

    private void scheduleQuietly(Runnable task, long delayNanos) {
        try {
            workers.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
        }
        catch (RejectedExecutionException closing) {
            // closed: the row expires by itself within its lease
        }
    }

    // ---------------------------------------------------------------- acquisition

    /** One acquisition: a try, then (while the wait lasts) more tries after growing pauses. */
    private final class Attempt {

        final LockRequest request;
        final CompletableFuture<LockHandle> future = new CompletableFuture<>();
        final long deadline;
        final JdbcDialect.Grant grant;
        long pauseNanos = options.minPollInterval().toNanos();

        Attempt(LockRequest request) {
            this.request = request;
            this.deadline = System.nanoTime() + request.waitNanos();
            long leaseMicros = request.watchdog() ? watchdogMicros : (request.leaseNanos() + 999) / 1000;
            this.grant = new JdbcDialect.Grant(request.key(), instance + ":" + request.owner().id(),
                    request.watchdog() ? instance : null, leaseMicros, request.fenced());
        }

        void schedule(long delayNanos) {
            try {
                workers.schedule(this::tryOnce, delayNanos, TimeUnit.NANOSECONDS);
            }
            catch (RejectedExecutionException ex) {
                future.completeExceptionally(new IllegalStateException("JdbcLockProvider is closed", ex));
            }
        }

        void tryOnce() {
            if (future.isDone()) {
                // cancelled, or failed by close(): no more tries
                return;
            }
            boolean watchdog = request.watchdog();
            if (watchdog) {
                // from before the statement until the handle is watched: see renew()
                inFlight.incrementAndGet();
            }
            Long token;
            try {
                long sentAt = System.nanoTime();
                try {
                    token = withConnection(connection -> dialect.tryAcquire(connection, table, grant));
                }
                catch (SQLException ex) {
                    if (!JdbcDialect.isConflict(ex)) {
                        // the statement may have committed before the failure reached us: give back what it may hold
                        giveBack(grant.key(), grant.owner(), watchdog ? watchdogNanos : request.leaseNanos(), watchdog);
                        future.completeExceptionally(new JdbcLockException("Acquiring lock '" + request.key()
                                + "' in table " + table + " failed", ex));
                        return;
                    }
                    // lost a race for the row to another transaction: the key is busy, like a held one
                    token = null;
                }
                catch (RuntimeException ex) {
                    giveBack(grant.key(), grant.owner(), watchdog ? watchdogNanos : request.leaseNanos(), watchdog);
                    future.completeExceptionally(ex);
                    return;
                }
                if (token != null) {
                    JdbcLockHandle handle = new JdbcLockHandle(grant.key(), grant.owner(), watchdog,
                            request.leaseNanos(), request.fenced() ? token : -1, sentAt);
                    if (watchdog) {
                        watch(handle);
                    }
                    if (!future.complete(handle)) {
                        // the caller stopped waiting (cancelled) or close() failed it: give the lock straight back
                        handle.releaseAsync();
                    }
                    return;
                }
            }
            finally {
                if (watchdog) {
                    inFlight.decrementAndGet();
                }
            }
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                future.complete(null);
                return;
            }
            // full jitter over the upper half: waiters of one key spread out instead of polling in step
            long pause = ThreadLocalRandom.current().nextLong(pauseNanos / 2, pauseNanos + 1);
            pauseNanos = Math.min(pauseNanos * 2, options.maxPollInterval().toNanos());
            // the last try comes at the end of the wait, not a pause after it
            schedule(Math.min(pause, remaining));
        }
    }

    // ---------------------------------------------------------------- watchdog renewal

    private void watch(JdbcLockHandle handle) {
        handle.watchedAt = changes.incrementAndGet();
        watched.put(handle.owner, handle);
    }

    private void unwatch(JdbcLockHandle handle) {
        if (watched.remove(handle.owner, handle)) {
            changes.incrementAndGet();
        }
    }

    private void renewSafely() {
        try {
            renew();
        }
        catch (Throwable unexpected) {
            // a scheduled task that throws is never run again: this one must keep running
            logger.error("Renewal of distlock's watchdog locks failed unexpectedly", unexpected);
        }
    }

    /**
     * Renews every watchdog lock of this provider with one statement, and reports those found lost.
     *
     * <p>Usually the statement's row count tells that all watched locks were renewed: when nothing changed while it ran
     * ({@link #changes} the same before and after, no watchdog acquisition {@link #inFlight} before or after), the rows
     * it renewed are exactly the watched ones, and a count equal to their number means none was lost. Otherwise (or
     * when the count is lower) a second statement reads which of this instance's rows are live, and only handles watched
     * before that read was sent are judged by it: a handle is watched only after its row was committed, so the read
     * sees the row of every handle it judges.
     */
    void renew() {
        if (watched.isEmpty() && inFlight.get() == 0) {
            return;
        }
        long before = changes.get();
        int inFlightBefore = inFlight.get();
        int size = watched.size();
        long sentAt = System.nanoTime();
        String now = dialect.now();
        int renewed;
        try {
            renewed = update("UPDATE " + table + " SET expires_at = " + now + " + ? WHERE instance = ? AND owner IS NOT "
                    + "NULL AND expires_at > " + now, watchdogMicros, instance);
        }
        catch (SQLException ex) {
            lastRenewalFailure = ex;
            logger.warn("Could not renew distlock's watchdog locks in " + table + " (tried again in "
                    + Duration.ofNanos(watchdogNanos / 3) + "): " + ex);
            reportOverdue();
            return;
        }
        boolean quiet = inFlightBefore == 0 && inFlight.get() == 0 && changes.get() == before;
        if (quiet && renewed == size) {
            watched.values().forEach(handle -> handle.renewedAt = Math.max(handle.renewedAt, sentAt));
            return;
        }
        long judged = changes.get();
        Set<String> live = new HashSet<>();
        try {
            withConnection(connection -> {
                try (PreparedStatement statement = connection.prepareStatement("SELECT owner FROM " + table
                        + " WHERE instance = ? AND expires_at > " + now)) {
                    statement.setString(1, instance);
                    try (ResultSet rows = statement.executeQuery()) {
                        while (rows.next()) {
                            live.add(rows.getString(1));
                        }
                    }
                }
                return null;
            });
        }
        catch (SQLException ex) {
            lastRenewalFailure = ex;
            reportOverdue();
            return;
        }
        for (JdbcLockHandle handle : watched.values()) {
            if (live.contains(handle.owner)) {
                if (handle.watchedAt <= before) {
                    // watched (so committed) before the renewal was sent, and live after it: renewed by it
                    handle.renewedAt = Math.max(handle.renewedAt, sentAt);
                }
            }
            else if (handle.watchedAt <= judged && watched.containsKey(handle.owner)) {
                unwatch(handle);
                handle.reportLost("the watchdog found its row in " + table + " no longer its own (its lease ran out "
                        + "or the row was changed behind its back)");
            }
        }
        reportOverdue();
    }

    private void reportOverdueSafely() {
        try {
            reportOverdue();
        }
        catch (Throwable unexpected) {
            logger.error("Checking distlock's watchdog locks for overdue renewals failed unexpectedly", unexpected);
        }
    }

    /** Reports the locks not renewed for a whole watchdog timeout: the database has expired them by now. */
    private void reportOverdue() {
        long now = System.nanoTime();
        for (JdbcLockHandle handle : watched.values()) {
            if (now - handle.renewedAt >= watchdogNanos) {
                unwatch(handle);
                SQLException failure = lastRenewalFailure;
                handle.reportLost("the watchdog could not renew it for " + Duration.ofNanos(watchdogNanos)
                        + " (its lease in the database has run out): " + ((failure != null) ? failure
                        : "no renewal was answered in time"));
            }
        }
    }

    /**
     * Stops renewing and polling; acquisitions still waiting fail with {@link IllegalStateException}; releases already
     * asked for still run. Held locks are not released: they expire within their lease or the watchdog timeout, as
     * those of a process that died would. The {@link DataSource} belongs to whoever created it.
     */
    @Override
    public void close() {
        closed = true;
        renewer.shutdownNow();
        // releases already handed to the workers still run (a caller may be waiting for them); waiters' next tries,
        // which wait for their pause, are dropped: their acquisitions fail below
        workers.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        workers.shutdown();
        callbacks.shutdown();
        for (Attempt attempt : pending) {
            attempt.future.completeExceptionally(new IllegalStateException("JdbcLockProvider closed while waiting for '"
                    + attempt.request.key() + "'"));
        }
    }

    @Override
    public String toString() {
        return "JdbcLockProvider[" + dialect + ", table " + table + ", instance " + instance + "]";
    }

    // ---------------------------------------------------------------- the handle

    /** One held lock: its row's key and owner; what the watchdog tracks; who reports its end. */
    final class JdbcLockHandle implements LockHandle {

        final String key;
        final String owner;
        final boolean watchdog;
        final long leaseNanos;
        /** When the statement that last set this lock's expiry was sent ({@link System#nanoTime()}). */
        volatile long renewedAt;
        /** The value of {@link #changes} when this handle was watched. */
        volatile long watchedAt;
        private volatile long token;
        /**
         * Whoever moves the handle out of HELD first speaks: the loss report or the release, so that a loss the
         * watchdog found and a release that finds the row gone never both report it.
         */
        private final AtomicInteger state = new AtomicInteger(HELD);
        private volatile String lostReason;
        private volatile Consumer<String> lostCallback;
        private final AtomicBoolean lossFired = new AtomicBoolean();

        JdbcLockHandle(String key, String owner, boolean watchdog, long leaseNanos, long token, long renewedAt) {
            this.key = key;
            this.owner = owner;
            this.watchdog = watchdog;
            this.leaseNanos = leaseNanos;
            this.token = token;
            this.renewedAt = renewedAt;
        }

        @Override
        public long fencingToken() {
            return token;
        }

        @Override
        public long newFencingToken() {
            if (state.get() == LOSS_REPORTED) {
                return -1;
            }
            String now = dialect.now();
            String raise = "UPDATE " + table + " SET token = GREATEST(token + 1, " + now + ") WHERE lock_key = ? AND "
                    + "owner = ? AND expires_at > " + now;
            try {
                Long issued = withConnection(connection -> {
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
                if (issued == null) {
                    return -1;
                }
                token = issued;
                return issued;
            }
            catch (SQLException ex) {
                throw new JdbcLockException("Issuing a fencing token for lock '" + key + "' in table " + table
                        + " failed", ex);
            }
        }

        @Override
        public boolean stillHeld() {
            if (state.get() == LOSS_REPORTED) {
                return false;
            }
            String now = dialect.now();
            try {
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
            catch (SQLException ex) {
                throw new JdbcLockException("Checking lock '" + key + "' in table " + table + " failed", ex);
            }
        }

        @Override
        public CompletableFuture<Boolean> releaseAsync() {
            if (watchdog) {
                unwatch(this);
            }
            state.compareAndSet(HELD, RELEASING);
            CompletableFuture<Boolean> result = new CompletableFuture<>();
            Runnable release = () -> {
                try {
                    result.complete(releaseRow(key, owner));
                }
                catch (SQLException | RuntimeException ex) {
                    // keeps trying in the background; the row expires within its lease in any case
                    giveBack(key, owner, watchdog ? watchdogNanos : leaseNanos, watchdog);
                    result.completeExceptionally(new JdbcLockException("Releasing lock '" + key + "' in table " + table
                            + " failed", ex));
                }
            };
            try {
                workers.execute(release);
            }
            catch (RejectedExecutionException closing) {
                // closed: release on the caller's thread rather than leave the row held until it expires
                release.run();
            }
            return result;
        }

        void reportLost(String reason) {
            if (state.compareAndSet(HELD, LOSS_REPORTED)) {
                lostReason = reason;
                fireLost();
            }
        }

        @Override
        public void whenLost(Consumer<String> callback) {
            lostCallback = callback;
            fireLost();
        }

        /** Runs the callback once, whichever of the loss and the registration comes second. */
        private void fireLost() {
            Consumer<String> callback = lostCallback;
            String reason = lostReason;
            if (callback != null && reason != null && lossFired.compareAndSet(false, true)) {
                try {
                    callbacks.execute(() -> callback.accept("Lock '" + key + "' lost: " + reason));
                }
                catch (RejectedExecutionException closed) {
                    // the provider is closed: nobody is left to tell
                }
            }
        }

        @Override
        public boolean lostWhileHeld() {
            return state.get() == LOSS_REPORTED;
        }

        @Override
        public String toString() {
            return "JdbcLock[" + key + ", owner " + owner + (watchdog ? ", watchdog" : "") + "]";
        }
    }
}

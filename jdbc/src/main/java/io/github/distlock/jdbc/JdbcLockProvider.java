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
import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
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
 * failed for a whole watchdog timeout (by then the database has expired the lock), and so does {@link #close()}. Each
 * lock is judged by its own owner's row, never by the statement's row count (see {@link #renew()}). A holder that dies
 * stops renewing:
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

    /**
     * The most rows left out of one renewal (each is a bind parameter of it): more give-backs at once come only from a
     * database that answers nothing, when renewals fail anyway.
     */
    private static final int MAX_UNRENEWED = 1000;

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
    /**
     * Owners whose rows are being given back (or were given up on): left out of the renewal, so that a row whose give-back
     * keeps failing expires by itself within the watchdog timeout. Owner to when it may be forgotten
     * ({@link System#nanoTime()}): two watchdog timeouts after the give-back began, when its row has expired even if a
     * renewal sent just before the exclusion extended it.
     */
    private final Map<String, Long> unrenewed = new ConcurrentHashMap<>();
    /** Whether the current thread is one of {@link #workers}: their statements need no hand-over to a worker. */
    private final ThreadLocal<Boolean> onWorkerThread = ThreadLocal.withInitial(() -> false);
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
        this.watchdogMicros = LockDurations.ceilMicros(watchdogNanos);
        this.dialect = checkDatabase(this.dataSource, table);
        java.util.concurrent.ThreadFactory workerThreads = daemons("distlock-jdbc");
        this.workers = new ScheduledThreadPoolExecutor(options.threads(), task -> workerThreads.newThread(() -> {
            onWorkerThread.set(true);
            task.run();
        }));
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
    public CompletableFuture<@Nullable LockHandle> acquire(LockRequest request) {
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
     * MySQL's {@code VARBINARY(1020)} holds 255 of them in UTF-8 (at most 3 bytes each, 4 for a pair). A NUL character
     * is refused (PostgreSQL cannot store it in text at all), and so is half a surrogate pair, which has no UTF-8 form:
     * the drivers would write it as {@code ?}, so that distinct keys would share one lock. Refused on every database,
     * so that a key that works on H2 in tests does not fail on PostgreSQL in production.
     */
    static void checkKey(String key) {
        if (key.length() > MAX_KEY_LENGTH) {
            throw new IllegalArgumentException("Lock key is " + key.length() + " characters long; the jdbc backend's "
                    + "table keeps keys of at most " + MAX_KEY_LENGTH + " (column lock_key): '"
                    + printable(key.substring(0, 40)) + "...'");
        }
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (c == 0) {
                throw new IllegalArgumentException("Lock key '" + printable(key) + "' contains a NUL character (at "
                        + i + "), which the jdbc backend's databases cannot store (PostgreSQL refuses it in text)");
            }
            if (Character.isHighSurrogate(c) && i + 1 < key.length() && Character.isLowSurrogate(key.charAt(i + 1))) {
                i++;
            }
            else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException("Lock key '" + printable(key) + "' contains half a surrogate pair (at "
                        + i + "), which has no UTF-8 form: the database would store it as '?', so that distinct keys "
                        + "would share one lock");
            }
        }
    }

    /** The key for a message: control characters and surrogates as {@code \\uXXXX}. */
    private static String printable(String key) {
        StringBuilder out = new StringBuilder(key.length());
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (Character.isISOControl(c) || Character.isSurrogate(c)) {
                out.append(String.format("\\u%04X", (int) c));
            }
            else {
                out.append(c);
            }
        }
        return out.toString();
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

    /**
     * Runs {@code work} on one of this provider's workers and waits for it: so that every statement of this backend
     * runs on the provider's threads, never on a caller's, where a thread-bound DataSource (a routing one, a
     * {@link TransactionAwareDataSourceProxy} inside another wrapper) would hand out the caller's transactional
     * connection. On a worker already, runs it at once (waiting for another worker could wait for itself).
     */
    private <T> T onWorker(SqlWork<T> work) throws SQLException {
        if (onWorkerThread.get()) {
            return withConnection(work);
        }
        CompletableFuture<T> result = new CompletableFuture<>();
        execute(() -> {
            try {
                result.complete(withConnection(work));
            }
            catch (Throwable ex) {
                result.completeExceptionally(ex);
            }
        });
        try {
            return result.get();
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new SQLException("interrupted while waiting for the statement's answer", ex);
        }
        catch (java.util.concurrent.ExecutionException ex) {
            Throwable cause = ex.getCause();
            if (cause instanceof SQLException sql) {
                throw sql;
            }
            if (cause instanceof RuntimeException runtime) {
                throw runtime;
            }
            if (cause instanceof Error error) {
                throw error;
            }
            throw new IllegalStateException(cause);
        }
    }

    /** On a worker; once the provider is closed, on a thread of its own: never on the caller's. */
    private void execute(Runnable task) {
        try {
            workers.execute(task);
        }
        catch (RejectedExecutionException closed) {
            Thread thread = new Thread(task, "distlock-jdbc-closed");
            thread.setDaemon(true);
            thread.start();
        }
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
     * Frees whatever {@code owner} may hold of {@code key} after a statement whose outcome is unknown (the connection
     * broke, the answer timed out, the caller stopped waiting) or a release that did not get through: tried again every
     * tenth of the lease (50 ms to 1 s) while the failures are themselves of unknown outcome or conflicts, for at most
     * the row's lease (a fixed one) or the watchdog timeout. A failure that is the database's definite answer (an error
     * that will come back every time) ends the retries at once. Only this owner's row can match, so it can free nothing
     * of anyone else's.
     *
     * <p>A watchdog row is left out of the renewal from now on ({@link #unrenewed}): were it renewed with the instance's
     * other rows, a give-back that can never get through would keep it held for as long as the provider lives; left
     * out, it expires within the watchdog timeout, which is why the retries may stop then.
     */
    private void giveBack(String key, String owner, long leaseNanos, boolean watchdog) {
        long start = System.nanoTime();
        if (watchdog) {
            unrenew(owner, start);
        }
        long deadline = LockDurations.deadline(start, leaseNanos);
        long period = Math.max(TimeUnit.MILLISECONDS.toNanos(50), Math.min(TimeUnit.SECONDS.toNanos(1), leaseNanos / 10));
        Runnable[] task = new Runnable[1];
        task[0] = () -> {
            try {
                if (releaseRow(key, owner)) {
                    logger.info("Gave back lock '" + key + "', taken for a call that had already failed or stopped waiting");
                }
            }
            catch (SQLException | RuntimeException ex) {
                boolean retryable = !(ex instanceof SQLException sql) || JdbcDialect.isOutcomeUnknown(sql)
                        || JdbcDialect.isConflict(sql);
                if (retryable && System.nanoTime() - deadline < 0) {
                    scheduleQuietly(task[0], period);
                }
                else if (watchdog) {
                    logger.warn("Gave up giving back lock '" + key + "' in " + table + " (owner " + owner + "): " + ex
                            + "; its row is no longer renewed and expires by the database's clock within "
                            + Duration.ofNanos(leaseNanos));
                }
            }
        };
        scheduleQuietly(task[0], 0);
    }

    /** Leaves {@code owner}'s row out of the renewal (see {@link #unrenewed}); bounded, see {@link #MAX_UNRENEWED}. */
    private void unrenew(String owner, long now) {
        if (unrenewed.size() < MAX_UNRENEWED) {
            unrenewed.put(owner, now + 2 * watchdogNanos);
        }
        else {
            logger.warn("More than " + MAX_UNRENEWED + " lock rows of " + table + " are being given back at once; the "
                    + "row of owner " + owner + " is renewed until its give-back gets through");
        }
    }

    /** The owners to leave out of a renewal sent now, forgetting those whose rows have surely expired. */
    private Set<String> unrenewed(long now) {
        unrenewed.values().removeIf(until -> now - until >= 0);
        return Set.copyOf(unrenewed.keySet());
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
        long pauseNanos = LockDurations.toNanos(options.minPollInterval());

        Attempt(LockRequest request) {
            this.request = request;
            this.deadline = LockDurations.deadline(System.nanoTime(), request.waitNanos());
            long leaseMicros = request.watchdog() ? watchdogMicros : LockDurations.ceilMicros(request.leaseNanos());
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
                        if (JdbcDialect.isOutcomeUnknown(ex)) {
                            // the statement may have committed before the failure reached us: give back what it may
                            // hold. Any other error is the database's answer: in autocommit, nothing was written
                            giveBack(grant.key(), grant.owner(), watchdog ? watchdogNanos : request.leaseNanos(),
                                    watchdog);
                        }
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
            long remaining = LockDurations.remaining(deadline, System.nanoTime());
            if (remaining <= 0) {
                future.complete(null);
                return;
            }
            // full jitter over the upper half: waiters of one key spread out instead of polling in step
            long pause = ThreadLocalRandom.current().nextLong(pauseNanos / 2, pauseNanos + 1);
            pauseNanos = Math.min(LockDurations.saturatedMultiply(pauseNanos, 2),
                    LockDurations.toNanos(options.maxPollInterval()));
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
     * <p>Invariant: a watched lock counts as renewed only when its own owner's row is seen renewed, never by a row
     * count. The statement renews every live row of this instance, and some of them are not watched (a release waiting
     * for a worker or a connection, a lock already reported lost, a cancelled acquisition's row): a count would let one
     * of those stand in for a watched lock whose row was taken, and hide that loss. On PostgreSQL the renewal itself
     * answers the owners it renewed ({@code RETURNING owner}); elsewhere a read of this instance's live rows follows it
     * (a row live after the renewal and committed before it was renewed by it: only a takeover, which changes the owner,
     * changes a live row's expiry otherwise).
     *
     * <p>A handle is watched only after its row was committed. So a handle watched before the renewal was sent
     * ({@link #changes} then) is seen by it: renewed if its owner is among the answer, lost if not. A handle watched
     * later is judged by the read that follows the renewal (MySQL, H2) if it was watched before that read was sent, and
     * otherwise by the next renewal.
     */
    void renew() {
        if (watched.isEmpty() && inFlight.get() == 0) {
            return;
        }
        long before = changes.get();
        long sentAt = System.nanoTime();
        Set<String> excluded = unrenewed(sentAt);
        String now = dialect.now();
        Set<String> live = new HashSet<>();
        long[] judged = {before};
        try {
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
                judged[0] = changes.get();
                try (PreparedStatement statement = connection.prepareStatement("SELECT owner FROM " + table
                        + " WHERE instance = ? AND owner IS NOT NULL AND expires_at > " + now)) {
                    statement.setString(1, instance);
                    readOwners(statement, live);
                }
                return null;
            });
        }
        catch (SQLException ex) {
            lastRenewalFailure = ex;
            logger.warn("Could not renew distlock's watchdog locks in " + table + " (tried again in "
                    + Duration.ofNanos(watchdogNanos / 3) + "): " + ex);
            reportOverdue();
            return;
        }
        for (JdbcLockHandle handle : watched.values()) {
            if (live.contains(handle.owner)) {
                if (handle.watchedAt <= before) {
                    // watched (so committed) before the renewal was sent, and seen live after it: renewed by it
                    handle.renewedAt = Math.max(handle.renewedAt, sentAt);
                }
            }
            else if (handle.watchedAt <= judged[0] && watched.containsKey(handle.owner)) {
                // a release of it unwatches it before its statement is sent: so this row was not freed by a release
                unwatch(handle);
                handle.reportLost("the watchdog found its row in " + table + " no longer its own (its lease ran out "
                        + "or the row was changed behind its back)");
            }
        }
        reportOverdue();
    }

    private static void readOwners(PreparedStatement statement, Set<String> owners) throws SQLException {
        try (ResultSet rows = statement.executeQuery()) {
            while (rows.next()) {
                owners.add(rows.getString(1));
            }
        }
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
     * those of a process that died would; the holders of watchdog locks are told at once through
     * {@link LockHandle#whenLost} ("lock provider closed: renewal stopped"), since their leases now run out while they
     * may still be working. The {@link DataSource} belongs to whoever created it.
     */
    @Override
    public void close() {
        closed = true;
        renewer.shutdownNow();
        // releases already handed to the workers still run (a caller may be waiting for them); waiters' next tries,
        // which wait for their pause, are dropped: their acquisitions fail below
        workers.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        workers.shutdown();
        // before the watched locks are told: a try that watches its handle and then completes its future either
        // completes it first (and so was watched before the loop below), or finds it failed and gives the lock back
        for (Attempt attempt : pending) {
            attempt.future.completeExceptionally(new IllegalStateException("JdbcLockProvider closed while waiting for '"
                    + attempt.request.key() + "'"));
        }
        for (JdbcLockHandle handle : watched.values()) {
            unwatch(handle);
            handle.reportLost("lock provider closed: renewal stopped");
        }
        // after the reports: those already handed to it still run
        callbacks.shutdown();
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
                Long issued = onWorker(connection -> {
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
                return onWorker(connection -> {
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
                    if (!(ex instanceof SQLException sql) || JdbcDialect.isOutcomeUnknown(sql)
                            || JdbcDialect.isConflict(sql)) {
                        // may or may not have freed it, or may succeed if tried again: keeps trying in the background
                        giveBack(key, owner, watchdog ? watchdogNanos : leaseNanos, watchdog);
                    }
                    else if (watchdog) {
                        // the database's definite answer, which a retry would get again: the row stays held until
                        // it expires, so it must not be renewed with the instance's others
                        unrenew(owner, System.nanoTime());
                    }
                    result.completeExceptionally(new JdbcLockException("Releasing lock '" + key + "' in table " + table
                            + " failed", ex));
                }
            };
            // closed: on a thread of its own rather than leave the row held until it expires
            execute(release);
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
                Runnable report = () -> callback.accept("Lock '" + key + "' lost: " + reason);
                try {
                    callbacks.execute(report);
                }
                catch (RejectedExecutionException closed) {
                    // the provider is closed (a callback registered after close()): told on the registering thread
                    try {
                        report.run();
                    }
                    catch (RuntimeException ex) {
                        logger.warn("Loss callback of lock '" + key + "' failed", ex);
                    }
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

package io.github.distlock.jdbc;

import java.sql.SQLException;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import javax.sql.DataSource;

import io.github.distlock.DistlockConfigurationException;
import io.github.distlock.LockKeyClosedException;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockHolderInfo;
import io.github.distlock.spi.LockInspector;
import io.github.distlock.spi.LockInstance;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
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
 * lock is judged by its own owner's row, never by the statement's row count. A holder that dies
 * stops renewing:
 * its lock expires within the watchdog timeout. Waiters poll with a doubling, jittered pause between tries, and give up
 * at the end of their wait.
 *
 * <p>Waiters of one key on one instance wait in line, in arrival order: only the first tries and polls, a later call
 * for the key joins the end instead of racing them, and a release by this instance wakes the first at once. On
 * PostgreSQL (unless {@link JdbcLockOptions#notifyReleases()} is off) one connection, held while the provider lives and
 * opened outside a HikariCP pool (another pool lends one of its own, and must have at least three), {@code LISTEN}s for the other instances: a waiter that fails a try tells them ({@code pg_notify}, at most once
 * a second per key), and their release of that key then notifies in its own statement, which wakes the first waiter
 * here. Polls stay the fallback: a listener reconnecting, a notification missed, and every other database.
 *
 * <p>Lock types: {@link LockType#REENTRANT}, fenced or not. {@code FAIR} would need a queue of waiters in the table and
 * {@code READ}/{@code WRITE} several holders per key with their own expiries; neither is offered, and asking for them
 * fails with an {@link IllegalArgumentException}.
 *
 * <p>Operations ({@link LockInspector}): the holder of a key on any instance, read from its row; a force release that
 * frees the row in one transaction and tells the evicted holder (at once on this instance; on another at its next
 * renewal period, which also checks that instance's fixed-lease locks with one read by primary key); a ping
 * ({@code SELECT 1}); instances announce themselves in the table {@code <table>_peers}, renewed with the locks and
 * ignored once expired. Keys are closed in their row ({@code closed}, the reason), which the statement that takes a
 * key checks itself, so that every instance sees it.
 *
 * <p>The tables must exist: the constructor checks them (and the connection) and fails with a
 * {@link DistlockConfigurationException} naming the schema script in this jar
 * ({@code io/github/distlock/jdbc/schema-<database>.sql}) and the property that creates it.
 */
public class JdbcLockProvider implements LockProvider, LockInspector, AutoCloseable {

    /** The longest key the table holds ({@code lock_key VARCHAR(255)}), in UTF-16 chars ({@link String#length()}). */
    public static final int MAX_KEY_LENGTH = 255;

    /** The longest reason {@link #closeKey} keeps (column {@code closed VARCHAR(255)}). */
    public static final int MAX_REASON_LENGTH = 255;

    private final JdbcLockOptions options;
    /** This provider's identity in the table: owners are {@code <instance>:<owner id>}, watchdog rows carry it. */
    private final String instance = UUID.randomUUID().toString();
    private final long watchdogMicros;

    /** The lock table's statements, and the database's dialect. */
    private final JdbcLockRepository repository;
    /** Runs the statements of acquisitions and releases, and the pauses between a waiter's tries. */
    private final JdbcWorkers workers;
    /** Renews the watchdog locks, and checks for renewals overdue, on threads of its own. */
    private final JdbcWatchdog watchdog;
    /** Loss reports: a callback that blocks must not hold up renewals. */
    private final ExecutorService callbacks;
    private final JdbcLockServices services;

    /**
     * The most pings in flight at once: a ping given up on (see {@link #ping}) may still hold its thread, and a
     * connection, until its own timeouts end it.
     */
    private static final int MAX_PINGS = 4;

    /** Runs pings: a database that does not answer holds up these threads, never a caller's. */
    private final ThreadPoolExecutor pings;
    private @Nullable Ping pendingPing;

    private final Set<JdbcAcquisition> pending = ConcurrentHashMap.newKeySet();
    /** Wakes this instance's waiters on other instances' releases (PostgreSQL), or {@code null}. */
    private final @Nullable JdbcListener listener;
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
        this(dataSource, options, new JdbcWaiters());
    }

    /** With {@code waiters} of its own (for tests: marks of remote waiters that lapse sooner). */
    JdbcLockProvider(DataSource dataSource, JdbcLockOptions options, JdbcWaiters waiters) {
        DataSource target = (dataSource instanceof TransactionAwareDataSourceProxy proxy)
                ? proxy.getTargetDataSource() : dataSource;
        this.options = options;
        long watchdogNanos = options.watchdogTimeout().toNanos();
        this.watchdogMicros = LockDurations.ceilMicros(watchdogNanos);
        this.repository = new JdbcLockRepository(target, options.tableName(), instance, watchdogMicros);
        // before any thread starts: a pool too small for the listener is refused
        JdbcListenerConnections listening = (options.notifyReleases() && canListen(repository.dialect()))
                ? JdbcListenerConnections.of(target) : null;
        this.workers = new JdbcWorkers(options.threads());
        this.watchdog = new JdbcWatchdog(repository, watchdogNanos);
        this.callbacks = Executors.newCachedThreadPool(JdbcWorkers.daemons("distlock-jdbc-callback"));
        this.pings = new ThreadPoolExecutor(0, MAX_PINGS, 1, TimeUnit.MINUTES, new SynchronousQueue<>(),
                JdbcWorkers.daemons("distlock-jdbc-ping"));
        this.listener = (listening != null)
                ? new JdbcListener(listening, repository.channel(), instance, waiters) : null;
        this.services = new JdbcLockServices(repository, workers, watchdog,
                new JdbcGiveBack(repository, workers, watchdog, waiters), callbacks, waiters, listener);
        if (listener != null) {
            listener.start();
        }
    }

    /**
     * Whether the database is PostgreSQL reached through pgjdbc, whose connections can wait for notifications: checked
     * without loading {@link JdbcListener}, which refers to the driver's classes, absent with another database.
     */
    private static boolean canListen(JdbcDialect dialect) {
        if (dialect != JdbcDialect.POSTGRESQL) {
            return false;
        }
        try {
            Class.forName("org.postgresql.PGConnection", false, JdbcLockProvider.class.getClassLoader());
            return true;
        }
        catch (ClassNotFoundException | LinkageError ex) {
            return false;
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
        JdbcAcquisition attempt = new JdbcAcquisition(services, options, instance, watchdogMicros, request);
        pending.add(attempt);
        attempt.future.whenComplete((handle, failure) -> pending.remove(attempt));
        attempt.start();
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

    // ---------------------------------------------------------------- operations (LockInspector) and closing keys

    /**
     * The holder of {@code key} on any instance, read from its row by the database's clock: at most one, mode
     * {@code exclusive} (the only type this backend takes), its owner as {@link #ownerName} writes it, its instance as
     * that instance {@linkplain #announce announced} itself (while its entry lives).
     */
    @Override
    public List<LockHolderInfo> holders(String key) {
        checkKey(key);
        try {
            return workers.onWorker(() -> describe(key, repository.holders(key)));
        }
        catch (SQLException ex) {
            throw new JdbcLockException("Reading the holders of lock '" + key + "' in table " + repository.table()
                    + " failed", ex);
        }
    }

    /**
     * Frees {@code key} whoever holds it, keeping its fencing token and whether it is closed. The evicted holder is
     * told through {@link LockHandle#whenLost} at once when it is on this instance, and at its instance's next renewal
     * period (a third of the watchdog timeout) otherwise, for a watchdog lock or a fixed lease alike.
     */
    @Override
    public List<LockHolderInfo> forceRelease(String key) {
        ForceRelease result = forceRelease(key, null);
        return result.released() ? result.holders() : List.of();
    }

    /**
     * Like {@link #forceRelease(String)}, only while {@code expectedOwner} holds {@code key}: the row is read and freed
     * in one transaction ({@code SELECT ... FOR UPDATE}, then an {@code UPDATE} naming the owner read).
     */
    @Override
    public ForceRelease forceRelease(String key, @Nullable String expectedOwner) {
        checkKey(key);
        try {
            return workers.onWorker(() -> {
                JdbcLockRepository.Eviction eviction = repository.forceRelease(key, expectedOwner);
                if (eviction.released()) {
                    for (JdbcLockRepository.Hold hold : eviction.holds()) {
                        watchdog.evicted(hold.owner(), "force-released by an operator");
                    }
                    // the key is free: this instance's next waiter need not wait for its poll
                    services.waiters().wake(key);
                }
                return new ForceRelease(eviction.released(), describe(key, eviction.holds()));
            });
        }
        catch (SQLException ex) {
            throw new JdbcLockException("Force-releasing lock '" + key + "' in table " + repository.table()
                    + " failed", ex);
        }
    }

    private List<LockHolderInfo> describe(String key, List<JdbcLockRepository.Hold> holds) throws SQLException {
        List<LockHolderInfo> holders = new ArrayList<>(holds.size());
        for (JdbcLockRepository.Hold hold : holds) {
            int colon = hold.owner().lastIndexOf(':');
            String instanceId = (colon > 0) ? hold.owner().substring(0, colon) : null;
            LockInstance named = (instanceId == null) ? null
                    : instanceId.equals(instance) ? watchdog.announced() : repository.peer(instanceId);
            holders.add(new LockHolderInfo(key, hold.owner(), instanceId, named, "exclusive",
                    Duration.of(Math.max(0, hold.remainingMicros()), ChronoUnit.MICROS)));
        }
        return holders;
    }

    /** {@code <instance id>:<owner id>}, as this provider writes it into the {@code owner} column. */
    @Override
    public String ownerName(long ownerId) {
        return instance + ":" + ownerId;
    }

    /**
     * {@code SELECT 1} on a connection of the {@link DataSource}, waited for at most {@code timeout}; the driver is asked
     * to give up on the statement after {@code timeout} too, as a query timeout and (where it supports one) as the
     * connection's network timeout, since a cancel cannot reach a server behind a dead connection. At most one ping is
     * sent at a time: while the database does not answer (or the pool has no connection to give), later pings wait for
     * the same one instead of taking more of the pool's connections. A ping unanswered for twice its timeout (stuck in
     * the pool's wait for a connection, or on a socket its driver does not time out) is left to end by itself and a
     * new one is sent, so that a database reachable again is seen as such at once; at most four are in flight.
     */
    @Override
    public boolean ping(Duration timeout) {
        CompletableFuture<Void> call;
        synchronized (this) {
            Ping ping = pendingPing;
            long now = System.nanoTime();
            if (ping == null || ping.call().isDone() || now - ping.sentAt() > ping.givenUpAfter()) {
                try {
                    ping = new Ping(CompletableFuture.runAsync(() -> {
                        try {
                            repository.ping(timeout);
                        }
                        catch (SQLException ex) {
                            throw new JdbcLockException("ping failed", ex);
                        }
                    }, pings), now, twice(Math.max(0, timeout.toNanos())));
                }
                catch (RejectedExecutionException ex) {
                    // closed, or every ping thread still waits for a database that does not answer
                    return false;
                }
                pendingPing = ping;
            }
            call = ping.call();
        }
        try {
            call.get(Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS);
            return true;
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return false;
        }
        catch (ExecutionException | TimeoutException ex) {
            return false;
        }
    }

    private static long twice(long nanos) {
        return (nanos > Long.MAX_VALUE / 2) ? Long.MAX_VALUE : 2 * nanos;
    }

    /**
     * A ping sent at {@code sentAt} ({@link System#nanoTime()}), which a later ping waits for until it is
     * {@code givenUpAfter} nanoseconds old.
     */
    private record Ping(CompletableFuture<Void> call, long sentAt, long givenUpAfter) {
    }

    /**
     * Writes this instance into the table {@code <table>_peers} (in the background: the startup never waits for the
     * database), renewed with the locks every third of the watchdog timeout and deleted by {@link #close()}; an entry
     * not renewed for a watchdog timeout (the instance died) is ignored by {@link #holders}.
     */
    @Override
    public void announce(LockInstance self) {
        watchdog.announce(Objects.requireNonNull(self, "self"));
        workers.execute(watchdog::announceSafely);
    }

    /**
     * Closes {@code key} in its row (created, free, when the key was never locked), where every instance's acquisitions
     * see it in the statement that would take the key: each of them fails with {@link LockKeyClosedException} at its
     * next try, a waiter of this instance at once, a waiter of another instance at its next poll (within
     * {@code distlock.jdbc.max-poll-interval}). The holder keeps its lock.
     *
     * @param reason at most 255 characters (column {@code closed})
     * @return the waiters of this instance told; those of other instances are not counted
     * @throws IllegalArgumentException when {@code reason} is {@code null} or longer than 255 characters
     */
    @Override
    public long closeKey(String key, String reason) {
        checkKey(key);
        if (reason == null || reason.length() > MAX_REASON_LENGTH) {
            throw new IllegalArgumentException("closeKey(key, reason): reason must be at most " + MAX_REASON_LENGTH
                    + " characters (column closed of table " + repository.table() + "), was "
                    + ((reason == null) ? "null" : reason.length() + " characters"));
        }
        // taken before the row is closed: a waiter whose next try sees the closed row fails by itself meanwhile, and
        // is counted all the same
        List<JdbcAcquisition> waiting = pending.stream().filter(attempt -> attempt.request.key().equals(key)).toList();
        try {
            workers.onWorker(() -> {
                repository.closeKey(key, reason);
                return null;
            });
        }
        catch (SQLException ex) {
            throw new JdbcLockException("Closing lock '" + key + "' in table " + repository.table() + " failed", ex);
        }
        long told = 0;
        for (JdbcAcquisition attempt : waiting) {
            attempt.future.completeExceptionally(new LockKeyClosedException(key, reason));
            if (attempt.future.handle((handle, failure) -> failure instanceof LockKeyClosedException).getNow(false)) {
                told++;
            }
        }
        for (JdbcAcquisition attempt : pending) {
            // arrived while the row was being closed: its next try would see it, this tells it now
            if (attempt.request.key().equals(key)) {
                attempt.future.completeExceptionally(new LockKeyClosedException(key, reason));
            }
        }
        return told;
    }

    /** Clears the key's closed mark: acquisitions on every instance take it again from their next try. */
    @Override
    public void reopenKey(String key) {
        checkKey(key);
        try {
            workers.onWorker(() -> {
                repository.reopenKey(key);
                return null;
            });
        }
        catch (SQLException ex) {
            throw new JdbcLockException("Reopening lock '" + key + "' in table " + repository.table() + " failed", ex);
        }
    }

    /** The dialect detected from the connection (for tests and diagnostics). */
    JdbcDialect dialect() {
        return repository.dialect();
    }

    /** This provider's identity in the table's {@code owner} and {@code instance} columns. */
    public String instanceId() {
        return instance;
    }

    /** The table the locks live in. */
    public String tableName() {
        return repository.table();
    }

    /** The renewals and checks of this provider's locks (for tests). */
    JdbcWatchdog watchdog() {
        return watchdog;
    }

    /** The listener of other instances' releases, or {@code null} (for tests). */
    @Nullable JdbcListener listener() {
        return listener;
    }

    /** This instance's waiters (for tests). */
    JdbcWaiters waiters() {
        return services.waiters();
    }

    /** Watchdog locks renewed right now (for tests and diagnostics). */
    int watchedLocks() {
        return watchdog.size();
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
        watchdog.stop();
        retire();
        if (listener != null) {
            listener.close();
        }
        workers.shutdown();
        // before the watched locks are told: a try that watches its handle and then completes its future either
        // completes it first (and so was watched before the loop below), or finds it failed and gives the lock back
        for (JdbcAcquisition attempt : pending) {
            attempt.future.completeExceptionally(new IllegalStateException("JdbcLockProvider closed while waiting for '"
                    + attempt.request.key() + "'"));
        }
        watchdog.reportAllLost("lock provider closed: renewal stopped");
        // after the reports: those already handed to it still run
        callbacks.shutdown();
        pings.shutdownNow();
    }

    /**
     * Deletes this instance's announcement, waiting a second at most: a database that does not answer must not hold up
     * the shutdown (the entry then expires by itself).
     */
    private void retire() {
        if (watchdog.announced() == null) {
            return;
        }
        try {
            CompletableFuture.runAsync(() -> {
                try {
                    repository.retire();
                }
                catch (SQLException ex) {
                    throw new JdbcLockException("Deleting this instance's entry failed", ex);
                }
            }, pings).get(1, TimeUnit.SECONDS);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        catch (ExecutionException | TimeoutException | RejectedExecutionException ex) {
            // expires by itself within the watchdog timeout
        }
    }

    @Override
    public String toString() {
        return "JdbcLockProvider[" + repository.dialect() + ", table " + repository.table() + ", instance " + instance
                + "]";
    }
}

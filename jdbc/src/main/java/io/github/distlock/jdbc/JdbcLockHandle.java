package io.github.distlock.jdbc;

import java.sql.SQLException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import io.github.distlock.spi.LockHandle;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/** One held lock: its row's key and owner; what the watchdog tracks; who reports its end. */
final class JdbcLockHandle implements LockHandle {

    // the provider's category: where users look for (and configure) its messages
    private static final Log logger = LogFactory.getLog(JdbcLockProvider.class);

    private static final int HELD = 0;
    private static final int RELEASING = 1;
    private static final int LOSS_REPORTED = 2;

    /** How often a release that lost a race for its row (a deadlock victim) is sent before the give-back takes over. */
    static final int CONFLICT_TRIES = 3;

    /**
     * How long this instance's line holds back after a release it notified to a waiting instance: long enough for
     * the notification to reach it and its try to come back (a millisecond or two between machines of one network),
     * short enough that a line of this instance with no one elsewhere to take the key hardly waits.
     */
    static final long HAND_OFF_NANOS = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(1);

    private final JdbcLockServices services;
    final String key;
    final String owner;
    final boolean watchdog;
    final long leaseNanos;
    /** When the statement that last set this lock's expiry was sent ({@link System#nanoTime()}). */
    volatile long renewedAt;
    /** The value of the watchdog's count of changes when this handle was watched. */
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

    JdbcLockHandle(JdbcLockServices services, String key, String owner, boolean watchdog, long leaseNanos, long token,
            long renewedAt) {
        this.services = services;
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
        JdbcLockRepository repository = services.repository();
        try {
            Long issued = services.workers().onWorker(() -> repository.raiseToken(key, owner));
            if (issued == null) {
                return -1;
            }
            token = issued;
            return issued;
        }
        catch (SQLException ex) {
            throw new JdbcLockException("Issuing a fencing token for lock '" + key + "' in table " + repository.table()
                    + " failed", ex);
        }
    }

    @Override
    public boolean stillHeld() {
        if (state.get() == LOSS_REPORTED) {
            return false;
        }
        JdbcLockRepository repository = services.repository();
        try {
            return services.workers().onWorker(() -> repository.isHeld(key, owner));
        }
        catch (SQLException ex) {
            throw new JdbcLockException("Checking lock '" + key + "' in table " + repository.table() + " failed", ex);
        }
    }

    /**
     * The key is free: this instance's next waiter tries at once, before the caller that released can lock again;
     * unless another instance waits too and was notified: then this instance's line holds back a moment, so that the
     * instances take turns instead of this one keeping the key.
     */
    private void wakeNext(boolean notified) {
        if (notified && services.waiters().yieldTo(key, HAND_OFF_NANOS)) {
            services.workers().scheduleQuietly(() -> services.waiters().wake(key), HAND_OFF_NANOS);
        }
        else {
            services.waiters().wake(key);
        }
    }

    @Override
    public CompletableFuture<Boolean> releaseAsync() {
        if (watchdog) {
            services.watchdog().unwatchForRelease(this);
        }
        else {
            services.watchdog().untrack(this);
        }
        state.compareAndSet(HELD, RELEASING);
        CompletableFuture<Boolean> result = new CompletableFuture<>();
        Runnable release = () -> {
            // a release notifies only when another instance said lately that it waits: a notifying commit takes a
            // database-wide lock in PostgreSQL, which the keys nobody else waits for need not pay
            boolean notify = services.listener() != null && services.waiters().remoteWaiters(key);
            for (int attempt = 1; ; attempt++) {
                try {
                    boolean released = services.repository().releaseRow(key, owner, notify);
                    if (released) {
                        wakeNext(notify);
                    }
                    result.complete(released);
                    return;
                }
                catch (SQLException ex) {
                    // a deadlock or serialization victim changed nothing (autocommit), and the DELETE removes this
                    // owner's row only: tried again at once, so that a release that lost a race with another
                    // caller's INSERT (InnoDB's gap locks on the key) still answers its caller with the outcome
                    if (attempt < CONFLICT_TRIES && !JdbcDialect.isOutcomeUnknown(ex) && JdbcDialect.isConflict(ex)) {
                        continue;
                    }
                    failed(result, ex);
                    return;
                }
                catch (RuntimeException ex) {
                    failed(result, ex);
                    return;
                }
            }
        };
        // closed: on a thread of its own rather than leave the row held until it expires
        services.workers().execute(release);
        return result;
    }

    private void failed(CompletableFuture<Boolean> result, Exception ex) {
        if (!(ex instanceof SQLException sql) || JdbcDialect.isOutcomeUnknown(sql)
                || JdbcDialect.isConflict(sql)) {
            // may or may not have freed it, or may succeed if tried again: keeps trying in the background
            services.giveBack().giveBack(key, owner,
                    watchdog ? services.watchdog().watchdogNanos() : leaseNanos, watchdog);
        }
        else if (watchdog) {
            // the database's definite answer, which a retry would get again: the row stays held until
            // it expires, so it must not be renewed with the instance's others
            services.watchdog().unrenew(owner, System.nanoTime());
        }
        result.completeExceptionally(new JdbcLockException("Releasing lock '" + key + "' in table "
                + services.repository().table() + " failed", ex));
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
                services.callbacks().execute(report);
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

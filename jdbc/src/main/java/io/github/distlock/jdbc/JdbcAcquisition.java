package io.github.distlock.jdbc;

import java.sql.SQLException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockKeyClosedException;
import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockRequest;
import org.jspecify.annotations.Nullable;

/**
 * One acquisition: a try, then (while the wait lasts) more tries after growing, jittered pauses, or as soon as a release
 * of the key wakes it. While other calls of this instance wait for the same key before it, it waits its turn in
 * {@link JdbcWaiters}' line without trying, but for one last try at the end of its wait.
 */
final class JdbcAcquisition {


    private final JdbcLockServices services;
    private final JdbcLockOptions options;
    final LockRequest request;
    final CompletableFuture<LockHandle> future = new CompletableFuture<>();
    private final long deadline;
    private final JdbcDialect.Grant grant;
    private long pauseNanos;

    // guarded by this: whether the next try may come before the deadline, and how it is woken
    /** Whether it is the first of its key's line, whose tries and polls are the line's. */
    private boolean first;
    /** A try is running: a wake-up meanwhile makes the next one come at once. */
    private boolean trying;
    /** Which try runs (or ran last): only the latest one's end says that no try runs. */
    private int tries;
    private boolean wokenWhileTrying;
    /** Woken while its turn was coming (the one before it just left the line): it tries at once when promoted. */
    private boolean wokenBeforeItsTurn;
    private @Nullable ScheduledFuture<?> nextTry;

    JdbcAcquisition(JdbcLockServices services, JdbcLockOptions options, String instance, long watchdogMicros,
            LockRequest request) {
        this.services = services;
        this.options = options;
        this.request = request;
        this.pauseNanos = LockDurations.toNanos(options.minPollInterval());
        this.deadline = LockDurations.deadline(System.nanoTime(), request.waitNanos());
        long leaseMicros = request.watchdog() ? watchdogMicros : LockDurations.ceilMicros(request.leaseNanos());
        this.grant = new JdbcDialect.Grant(request.key(), instance + ":" + request.owner().id(),
                request.watchdog() ? instance : null, leaseMicros, request.fenced());
    }

    /**
     * Starts it: at once when it is the first of its key's line (or waits for nothing: a try-lock never queues),
     * otherwise one last try at the end of its wait unless its turn comes before.
     */
    void start() {
        boolean queued = request.waitNanos() > 0;
        synchronized (this) {
            first = !queued || services.waiters().join(this);
            schedule(first ? 0 : LockDurations.remaining(deadline, System.nanoTime()));
        }
        if (queued) {
            future.whenComplete((handle, failure) -> {
                stopTrying();
                services.waiters().leave(this, handle != null);
            });
        }
    }

    /**
     * Done (acquired, given up, failed or cancelled): the next try, which may be the one at the end of a long wait, is
     * taken off the workers' queue rather than left there until its time.
     */
    private synchronized void stopTrying() {
        if (nextTry != null) {
            nextTry.cancel(false);
            nextTry = null;
        }
    }

    /**
     * Its turn came: the one before it in the line is done. It tries at once, unless that one acquired the key: then
     * this instance's release of it wakes it, and its pauses are the fallback.
     */
    void promote(boolean previousAcquired) {
        synchronized (this) {
            first = true;
            reschedule(previousAcquired && !wokenBeforeItsTurn ? nextPause() : 0);
        }
    }

    /**
     * The key was freed: the first of the line tries at once; the others wait their turn. Only the first of a line is
     * woken, or the one about to be promoted to first (the line's first just left it): that one remembers it for
     * {@link #promote}.
     */
    void wake() {
        synchronized (this) {
            if (first) {
                reschedule(0);
            }
            else {
                wokenBeforeItsTurn = true;
            }
        }
    }

    /** Guarded by this. */
    private void reschedule(long delayNanos) {
        if (trying) {
            wokenWhileTrying = wokenWhileTrying || delayNanos == 0;
        }
        else if (nextTry != null && nextTry.getDelay(TimeUnit.NANOSECONDS) > delayNanos && nextTry.cancel(false)) {
            schedule(Math.min(delayNanos, LockDurations.remaining(deadline, System.nanoTime())));
        }
        // else: the try is about to run, and its statement comes after what woke it
    }

    /** Guarded by this. */
    private void schedule(long delayNanos) {
        if (future.isDone()) {
            // stopTrying() ran already: nothing would cancel this one
            return;
        }
        try {
            nextTry = services.workers().schedule(this::tryOnce, delayNanos);
        }
        catch (RejectedExecutionException ex) {
            future.completeExceptionally(new IllegalStateException("JdbcLockProvider is closed", ex));
        }
    }

    private void tryOnce() {
        boolean announce;
        int thisTry;
        synchronized (this) {
            nextTry = null;
            if (first && request.waitNanos() > 0 && !future.isDone()) {
                // the line holds back while another instance takes the key this instance just released
                long yieldLeft = services.waiters().yieldLeft(request.key());
                if (yieldLeft > 0 && yieldLeft < LockDurations.remaining(deadline, System.nanoTime())) {
                    schedule(yieldLeft);
                    return;
                }
            }
            trying = true;
            thisTry = ++tries;
            wokenWhileTrying = false;
            // a try-lock does not wait: nothing to announce
            announce = first && request.waitNanos() > 0 && services.listener() != null
                    && services.waiters().announceDue(request.key());
        }
        try {
            tryOnceTrying(announce);
        }
        finally {
            synchronized (this) {
                // the next try may run already (scheduled at once at the end of this one): it is the one trying now
                if (tries == thisTry) {
                    trying = false;
                }
            }
        }
    }

    private void tryOnceTrying(boolean announce) {
        if (future.isDone()) {
            // cancelled, or failed by close(): no more tries
            return;
        }
        boolean watchdog = request.watchdog();
        JdbcWatchdog renewal = services.watchdog();
        if (watchdog) {
            // from before the statement until the handle is watched: see JdbcWatchdog.renew()
            renewal.acquisitionSent();
        }
        Long token;
        try {
            long sentAt = System.nanoTime();
            try {
                JdbcLockRepository.Claim claim = services.repository().tryAcquire(grant, announce);
                if (claim.closed() != null) {
                    future.completeExceptionally(new LockKeyClosedException(request.key(), claim.closed()));
                    return;
                }
                token = claim.token();
                if (token == null && announce) {
                    services.waiters().announced(request.key());
                }
            }
            catch (SQLException ex) {
                if (!JdbcDialect.isConflict(ex)) {
                    if (JdbcDialect.isOutcomeUnknown(ex)) {
                        // the statement may have committed before the failure reached us: give back what it may
                        // hold. Any other error is the database's answer: in autocommit, nothing was written
                        services.giveBack().giveBack(grant.key(), grant.owner(),
                                watchdog ? renewal.watchdogNanos() : request.leaseNanos(), watchdog);
                    }
                    future.completeExceptionally(new JdbcLockException("Acquiring lock '" + request.key()
                            + "' in table " + services.repository().table() + " failed", ex));
                    return;
                }
                // lost a race for the row to another transaction: the key is busy, like a held one
                token = null;
            }
            catch (RuntimeException ex) {
                services.giveBack().giveBack(grant.key(), grant.owner(),
                        watchdog ? renewal.watchdogNanos() : request.leaseNanos(), watchdog);
                future.completeExceptionally(ex);
                return;
            }
            if (token != null) {
                JdbcLockHandle handle = new JdbcLockHandle(services, grant.key(), grant.owner(), watchdog,
                        request.leaseNanos(), request.fenced() ? token : -1, sentAt);
                if (watchdog) {
                    renewal.watch(handle);
                }
                else {
                    renewal.track(handle);
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
                renewal.acquisitionDone();
            }
        }
        long remaining = LockDurations.remaining(deadline, System.nanoTime());
        if (remaining <= 0) {
            future.complete(null);
            return;
        }
        synchronized (this) {
            // in the same block as the next try is scheduled: a wake-up from now on reschedules that one
            trying = false;
            // the last try comes at the end of the wait, not a pause after it; one woken meanwhile comes at once
            long pause = wokenWhileTrying ? 0 : first ? nextPause() : remaining;
            schedule(Math.min(pause, remaining));
        }
    }

    /** The next pause, doubling: full jitter over the upper half, so that instances' waiters do not poll in step. */
    private long nextPause() {
        long pause = ThreadLocalRandom.current().nextLong(pauseNanos / 2, pauseNanos + 1);
        pauseNanos = Math.min(LockDurations.saturatedMultiply(pauseNanos, 2),
                LockDurations.toNanos(options.maxPollInterval()));
        JdbcListener listener = services.listener();
        if (listener != null && listener.listening()) {
            // the other instances forget that this one waits once its mark is this old; a failed try renews it
            // (announceDue), so tries come often enough that their releases keep notifying, however long the polls
            pause = Math.min(pause, services.waiters().remoteWaiterNanos() / 2);
        }
        return pause;
    }
}

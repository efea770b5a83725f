package io.github.distlock.jdbc;

import java.sql.SQLException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;

import io.github.distlock.LockKeyClosedException;
import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockRequest;

/** One acquisition: a try, then (while the wait lasts) more tries after growing, jittered pauses. */
final class JdbcAcquisition {

    private final JdbcLockServices services;
    private final JdbcLockOptions options;
    final LockRequest request;
    final CompletableFuture<LockHandle> future = new CompletableFuture<>();
    private final long deadline;
    private final JdbcDialect.Grant grant;
    private long pauseNanos;

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

    void schedule(long delayNanos) {
        try {
            services.workers().schedule(this::tryOnce, delayNanos);
        }
        catch (RejectedExecutionException ex) {
            future.completeExceptionally(new IllegalStateException("JdbcLockProvider is closed", ex));
        }
    }

    private void tryOnce() {
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
                JdbcLockRepository.Claim claim = services.repository().tryAcquire(grant);
                if (claim.closed() != null) {
                    future.completeExceptionally(new LockKeyClosedException(request.key(), claim.closed()));
                    return;
                }
                token = claim.token();
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
        // full jitter over the upper half: waiters of one key spread out instead of polling in step
        long pause = ThreadLocalRandom.current().nextLong(pauseNanos / 2, pauseNanos + 1);
        pauseNanos = Math.min(LockDurations.saturatedMultiply(pauseNanos, 2),
                LockDurations.toNanos(options.maxPollInterval()));
        // the last try comes at the end of the wait, not a pause after it
        schedule(Math.min(pause, remaining));
    }
}

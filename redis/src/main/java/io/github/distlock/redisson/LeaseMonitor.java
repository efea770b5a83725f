package io.github.distlock.redisson;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * Watches the watchdog-renewed locks this process holds, because Redisson does not say when renewal fails (it only
 * logs; Redisson #4698): every third of the watchdog timeout it asks Redis whether each lock is still its holder's.
 * A lock found gone or owned by another, or not confirmed for a whole watchdog timeout (Redis unreachable: renewal
 * cannot have succeeded either, so the key has expired or is about to), is reported lost while its method still runs.
 *
 * <p>Invariants: a handle is removed from the watch set before its unlock is sent, so a "not held" answer that
 * arrives after the release began is never reported as a loss. Only bookkeeping runs on the monitor's thread; losses
 * are reported on a thread of their own, so a listener that blocks or throws can neither delay the confirmation of
 * other locks (which would make healthy locks look lost) nor stop the monitor.
 */
final class LeaseMonitor implements AutoCloseable {

    private static final Log logger = LogFactory.getLog(LeaseMonitor.class);

    private final Set<RedissonLockHandle> watched = ConcurrentHashMap.newKeySet();
    private final long timeoutNanos;
    private final long periodMillis;
    private volatile ScheduledExecutorService timer;
    private volatile ExecutorService reporter;
    private boolean closed;

    LeaseMonitor(long watchdogTimeoutMillis) {
        this.timeoutNanos = TimeUnit.MILLISECONDS.toNanos(watchdogTimeoutMillis);
        this.periodMillis = Math.max(1, watchdogTimeoutMillis / 3);
    }

    void watch(RedissonLockHandle handle) {
        handle.confirmedAt = System.nanoTime();
        watched.add(handle);
        if (timer == null) {
            start();
        }
    }

    void unwatch(RedissonLockHandle handle) {
        watched.remove(handle);
    }

    private synchronized void start() {
        if (timer == null) {
            startReporter();
            ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor(
                    task -> daemon(task, "distlock-lease-monitor"));
            // published before the first check runs, which hands its answers to this executor
            timer = executor;
            executor.scheduleWithFixedDelay(this::check, periodMillis, periodMillis, TimeUnit.MILLISECONDS);
        }
    }

    /** A thread per report (losses are rare): a listener that blocks holds up no other lock's report. */
    private synchronized ExecutorService startReporter() {
        if (closed) {
            throw new java.util.concurrent.RejectedExecutionException("closed");
        }
        if (reporter == null) {
            reporter = Executors.newCachedThreadPool(task -> daemon(task, "distlock-lease-lost"));
        }
        return reporter;
    }

    /**
     * Reports {@code handle} lost now, found by other means than the lease check (an operator's force release): it is
     * no longer checked, and its listener runs on a reporting thread, as the check's reports do.
     */
    void reportLost(RedissonLockHandle handle, String reason) {
        watched.remove(handle);
        report(handle, reason);
    }

    private static Thread daemon(Runnable task, String name) {
        Thread thread = new Thread(task, name);
        thread.setDaemon(true);
        return thread;
    }

    private void check() {
        try {
            long now = System.nanoTime();
            for (RedissonLockHandle handle : watched) {
                if (now - handle.confirmedAt > timeoutNanos) {
                    if (watched.remove(handle)) {
                        report(handle, "not confirmed by Redis for " + TimeUnit.NANOSECONDS.toMillis(now - handle.confirmedAt)
                                + " ms (watchdog timeout " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos)
                                + " ms): renewal cannot have succeeded, so the lock has expired or is about to");
                    }
                    continue;
                }
                if (handle.checking) {
                    continue;
                }
                handle.checking = true;
                long sentAt = System.nanoTime();
                // completed on this monitor's thread, not Redisson's event loop, and only for bookkeeping
                handle.confirm().whenCompleteAsync((held, failure) -> {
                    handle.checking = false;
                    if (failure != null) {
                        return;
                    }
                    if (held) {
                        handle.confirmedAt = sentAt;
                    }
                    else if (watched.remove(handle)) {
                        report(handle, "its key is gone from Redis or belongs to another holder");
                    }
                }, timer);
            }
        }
        catch (Throwable ex) {
            // the timer must survive anything: a dead monitor would silently stop reporting losses
            logger.error("Lease check failed; will retry", ex);
        }
    }

    private void report(RedissonLockHandle handle, String reason) {
        ExecutorService executor = reporter;
        if (executor == null) {
            executor = startReporter();
        }
        try {
            executor.execute(() -> {
                try {
                    handle.lost(reason);
                }
                catch (Throwable ex) {
                    logger.error("Reporting the loss of lock '" + handle.lock().getName() + "' failed", ex);
                }
            });
        }
        catch (java.util.concurrent.RejectedExecutionException closed) {
            // the provider is closing: nobody is left to tell
        }
    }

    /** Locks watched right now. */
    int watchedCount() {
        return watched.size();
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
        }
        ScheduledExecutorService executor = timer;
        if (executor != null) {
            executor.shutdownNow();
        }
        ExecutorService reports = reporter;
        if (reports != null) {
            reports.shutdownNow();
        }
    }
}

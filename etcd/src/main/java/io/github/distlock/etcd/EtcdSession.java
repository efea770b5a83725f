package io.github.distlock.etcd;

import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The lease that watchdog locks share, renewed here every third of its TTL.
 *
 * <p>Invariant: once {@link #lost} is set, nothing is added to it for good: a holder or waiter added afterwards
 * finds it set (added first, looked second; {@link #lose} sets first, goes through the sets second).
 */
final class EtcdSession {

    private final EtcdLockRepository repository;
    private final ScheduledExecutorService timer;
    private final EtcdSessions sessions;
    final long leaseId;
    final long ttlMillis;
    /** Renewed this often: a third of the TTL. */
    private final long period;
    /** When the latest renewal the server confirmed was sent (the lease runs at least TTL from then). */
    private volatile long confirmedAt;
    private final CompletableFuture<EtcdSession> published;
    final Set<EtcdLockHandle> holders = ConcurrentHashMap.newKeySet();
    final Set<EtcdAcquisition> waiters = ConcurrentHashMap.newKeySet();
    final AtomicBoolean lost = new AtomicBoolean();
    /**
     * Renewals sent and not yet answered. Each may take up to two periods (until the silence rule would give the lease
     * up anyway), and a second is sent meanwhile: an answer delayed past a period (seen behind a burst of hundreds of
     * acquisitions on a busy machine) no longer costs the session, and the latest renewal answered counts.
     */
    private final java.util.concurrent.atomic.AtomicInteger renewing = new java.util.concurrent.atomic.AtomicInteger();
    private volatile ScheduledFuture<?> renewal;

    EtcdSession(EtcdLockRepository repository, ScheduledExecutorService timer, EtcdSessions sessions, long leaseId,
            long ttlSeconds, long grantedSince, CompletableFuture<EtcdSession> published) {
        this.repository = repository;
        this.timer = timer;
        this.sessions = sessions;
        this.leaseId = leaseId;
        this.ttlMillis = TimeUnit.SECONDS.toMillis(ttlSeconds);
        this.period = Math.max(50, ttlMillis / 3);
        this.confirmedAt = grantedSince;
        this.published = published;
    }

    void start() {
        try {
            renewal = timer.scheduleWithFixedDelay(this::renew, period, period, TimeUnit.MILLISECONDS);
        }
        catch (RuntimeException closedMeanwhile) {
            repository.revoke(leaseId).exceptionally(failure -> null);
        }
    }

    void stop() {
        ScheduledFuture<?> task = renewal;
        if (task != null) {
            task.cancel(false);
        }
    }

    private void renew() {
        long silentFor = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - confirmedAt);
        // ">=" two periods: the second tick after the last confirmed renewal always sees at least that much
        // silence, so the holder is told a third of the TTL before etcd can expire the lease, not at about the TTL
        if (silentFor >= 2 * period) {
            lose("its etcd lease " + Long.toHexString(leaseId) + " was not renewed for " + silentFor + " ms (TTL "
                    + ttlMillis + " ms): etcd is unreachable, and the lease may expire before it can be renewed");
            return;
        }
        if (renewing.incrementAndGet() > 2) {
            renewing.decrementAndGet();
            return; // two renewals are still under way
        }
        long sent = System.nanoTime();
        repository.keepAliveOnce(leaseId).orTimeout(2 * period, TimeUnit.MILLISECONDS).whenComplete((answer, failure) -> {
            renewing.decrementAndGet();
            if (failure == null) {
                if (sent - confirmedAt > 0) {
                    confirmedAt = sent;
                }
            }
            else if (EtcdLockProvider.isNotFound(failure)) {
                lose("its etcd lease " + Long.toHexString(leaseId) + " expired (etcd no longer knows it)");
            }
            // else: unreachable for now; the next renewal tries again, and the silence check above decides
        });
    }

    /** Reports every holder lost, fails every waiter, and makes the next acquisition grant a new lease. */
    void lose(String reason) {
        if (!lost.compareAndSet(false, true)) {
            return;
        }
        stop();
        sessions.unpublish(published);
        EtcdLockProvider.log().warn("distlock: " + reason + "; " + holders.size() + " lock(s) held with it reported lost");
        for (EtcdLockHandle handle : holders) {
            handle.lost(reason);
        }
        for (EtcdAcquisition acquisition : waiters) {
            acquisition.fail(new IllegalStateException("The etcd lease of lock '" + acquisition.request.key()
                    + "' was lost while waiting: " + reason));
        }
    }
}

package io.github.distlock.jdbc;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockInstance;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Renews the watchdog locks of one provider with one statement per period, and tells their holders when a lock was
 * found lost or could not be renewed for a whole watchdog timeout. In the same period, one read by primary key checks
 * the provider's fixed-lease locks for one taken away, and one statement renews the instance's announcement.
 */
final class JdbcWatchdog {

    // the provider's category: where users look for (and configure) its messages
    private static final Log logger = LogFactory.getLog(JdbcLockProvider.class);

    /**
     * The most rows left out of one renewal (each is a bind parameter of it): more give-backs at once come only from a
     * database that answers nothing, when renewals fail anyway.
     */
    private static final int MAX_UNRENEWED = 1000;

    private final JdbcLockRepository repository;
    private final String table;
    private final long watchdogNanos;
    /**
     * Renews the watchdog locks, and checks for renewals overdue: threads of their own, so that a queue of waiters'
     * tries never delays a renewal.
     */
    private final ScheduledThreadPoolExecutor renewer;

    /** Watchdog locks this provider renews, by owner. */
    private final Map<String, JdbcLockHandle> watched = new ConcurrentHashMap<>();
    /** Fixed-lease locks of this provider whose leases last, by owner: checked for eviction every period. */
    private final Map<String, JdbcLockHandle> fixed = new ConcurrentHashMap<>();
    /** This instance as it announced itself, or {@code null} before it did. */
    private volatile @Nullable LockInstance announced;
    /** Counts every change of {@link #watched}; see {@link #renew()}. */
    private final AtomicLong changes = new AtomicLong();
    /** Watchdog acquisitions whose statement may have written a row that is not in {@link #watched} yet. */
    private final AtomicInteger inFlight = new AtomicInteger();
    /**
     * Owners whose rows are being given back (or were given up on): left out of the renewal, so that a row whose give-back
     * keeps failing expires by itself within the watchdog timeout. Owner to when it may be forgotten
     * ({@link System#nanoTime()}): two watchdog timeouts after the give-back began, when its row has expired even if a
     * renewal sent just before the exclusion extended it.
     */
    private final Map<String, Long> unrenewed = new ConcurrentHashMap<>();
    private volatile SQLException lastRenewalFailure;

    /** Starts renewing every third of the watchdog timeout. */
    JdbcWatchdog(JdbcLockRepository repository, long watchdogNanos) {
        this.repository = repository;
        this.table = repository.table();
        this.watchdogNanos = watchdogNanos;
        this.renewer = new ScheduledThreadPoolExecutor(2, JdbcWorkers.daemons("distlock-jdbc-renewal"));
        long period = Math.max(1, watchdogNanos / 3);
        this.renewer.scheduleWithFixedDelay(this::renewSafely, period, period, TimeUnit.NANOSECONDS);
        // on the second thread: a renewal statement that hangs (a database that stopped answering, a driver without
        // a socket timeout) must not keep the holders from being told when their leases have run out
        long check = Math.max(TimeUnit.MILLISECONDS.toNanos(10), watchdogNanos / 10);
        this.renewer.scheduleWithFixedDelay(this::reportOverdueSafely, check, check, TimeUnit.NANOSECONDS);
    }

    long watchdogNanos() {
        return watchdogNanos;
    }

    /** Watchdog locks renewed right now. */
    int size() {
        return watched.size();
    }

    /** From before an acquisition's statement until its handle is watched: see {@link #renew()}. */
    void acquisitionSent() {
        inFlight.incrementAndGet();
    }

    void acquisitionDone() {
        inFlight.decrementAndGet();
    }

    void watch(JdbcLockHandle handle) {
        handle.watchedAt = changes.incrementAndGet();
        watched.put(handle.owner, handle);
    }

    void unwatch(JdbcLockHandle handle) {
        if (watched.remove(handle.owner, handle)) {
            changes.incrementAndGet();
        }
    }

    /**
     * Unwatches a lock its holder releases, reporting it lost first when no renewal was seen for a whole watchdog
     * timeout: the database has expired it by now. The overdue check runs on its own schedule, so a holder that
     * resumes after a long pause (or whose database was unreachable) and releases at once would otherwise never be
     * told that another caller may have held the key meanwhile.
     */
    void unwatchForRelease(JdbcLockHandle handle) {
        if (watched.remove(handle.owner, handle)) {
            changes.incrementAndGet();
            if (System.nanoTime() - handle.renewedAt >= watchdogNanos) {
                SQLException failure = lastRenewalFailure;
                handle.reportLost("no renewal of it was seen for " + Duration.ofNanos(watchdogNanos) + " when its "
                        + "holder released it (its lease in the database had run out): " + ((failure != null)
                                ? failure : "no renewal was answered in time"));
            }
        }
    }

    /** Tracks a fixed-lease lock until its release or its lease's end, to find it taken away: see {@link #checkFixed}. */
    void track(JdbcLockHandle handle) {
        fixed.put(handle.owner, handle);
    }

    void untrack(JdbcLockHandle handle) {
        fixed.remove(handle.owner, handle);
    }

    /**
     * Tells the holder of {@code owner}'s lock, if it is one of this provider's, that an operator took it away: at
     * once, rather than at the next renewal.
     */
    void evicted(String owner, String reason) {
        JdbcLockHandle handle = watched.get(owner);
        if (handle != null) {
            unwatch(handle);
        }
        else {
            handle = fixed.remove(owner);
        }
        if (handle != null) {
            handle.reportLost(reason);
        }
    }

    /**
     * Keeps this instance's entry in the table of instances from now on, renewed with the locks every period (and so
     * written again once a database that was away is back); the provider writes the first one.
     */
    void announce(LockInstance self) {
        announced = self;
    }

    @Nullable LockInstance announced() {
        return announced;
    }

    private void renewSafely() {
        try {
            renew();
        }
        catch (Throwable unexpected) {
            // a scheduled task that throws is never run again: this one must keep running
            logger.error("Renewal of distlock's watchdog locks failed unexpectedly", unexpected);
        }
        try {
            checkFixed();
        }
        catch (Throwable unexpected) {
            logger.error("Checking distlock's fixed-lease locks failed unexpectedly", unexpected);
        }
        announceSafely();
    }

    /** Writes this instance's entry, if it announced itself; a failure is logged, and the next period tries again. */
    void announceSafely() {
        LockInstance self = announced;
        if (self == null) {
            return;
        }
        try {
            repository.announce(self, LockDurations.ceilMicros(watchdogNanos));
        }
        catch (SQLException | RuntimeException ex) {
            logger.debug("Could not announce this instance in " + table + JdbcLockRepository.PEERS + " (tried again in "
                    + Duration.ofNanos(watchdogNanos / 3) + "): " + ex);
        }
    }

    /**
     * Finds the fixed-lease locks of this provider taken away from their holders (by a force release on any instance,
     * or a row changed by hand) while their leases last: one read by primary key per period for all of them (at most
     * {@link #MAX_UNRENEWED} keys per read).
     *
     * <p>The read looks at the owner alone, not at the expiry: a row still its holder's is never a loss, whether or not
     * its lease has just run out. A row that is another owner's, or free, is a loss only if the answer came back before
     * the lease counted from before the acquisition's statement was sent had ended: the database's expiry is no
     * earlier, so the read saw the row while the lease lasted. A later answer cannot tell a row taken away from one
     * whose lease ran out (and that the next caller then took): its holder learns it at release, as when the lease is
     * over before the read.
     */
    void checkFixed() throws SQLException {
        if (fixed.isEmpty()) {
            return;
        }
        long sentAt = System.nanoTime();
        List<JdbcLockHandle> judged = new ArrayList<>();
        for (JdbcLockHandle handle : fixed.values()) {
            if (sentAt - handle.renewedAt >= handle.leaseNanos) {
                // over by now: its holder learns the rest at release, as before
                untrack(handle);
            }
            else if (judged.size() < MAX_UNRENEWED) {
                judged.add(handle);
            }
        }
        if (judged.isEmpty()) {
            return;
        }
        Set<String> keys = new HashSet<>();
        for (JdbcLockHandle handle : judged) {
            keys.add(handle.key);
        }
        Map<String, String> owners = repository.owners(keys);
        long answeredAt = System.nanoTime();
        for (JdbcLockHandle handle : judged) {
            if (handle.owner.equals(owners.get(handle.key))) {
                continue;
            }
            if (answeredAt - handle.renewedAt >= handle.leaseNanos) {
                // the lease may have ended before the read reached the database
                untrack(handle);
            }
            // a release untracks its handle before its statement is sent: one still tracked was not freed by it
            else if (fixed.remove(handle.owner, handle)) {
                handle.reportLost("its row in " + table + " was found no longer its own before its lease ran out "
                        + "(taken away by a force release, or changed behind its back)");
            }
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
        Set<String> live = new HashSet<>();
        long judged;
        try {
            judged = repository.renew(excluded, live, before, changes::get);
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
            else if (handle.watchedAt <= judged && watched.containsKey(handle.owner)) {
                // a release of it unwatches it before its statement is sent: so this row was not freed by a release
                unwatch(handle);
                handle.reportLost("the watchdog found its row in " + table + " no longer its own (taken away by a "
                        + "force release, its lease ran out, or the row was changed behind its back)");
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

    /** Leaves {@code owner}'s row out of the renewal (see {@link #unrenewed}); bounded, see {@link #MAX_UNRENEWED}. */
    void unrenew(String owner, long now) {
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

    /** Stops renewing: the watched locks' leases now run out. */
    void stop() {
        renewer.shutdownNow();
    }

    /** Stops watching every lock and tells its holder why. */
    void reportAllLost(String reason) {
        for (JdbcLockHandle handle : watched.values()) {
            unwatch(handle);
            handle.reportLost(reason);
        }
    }
}

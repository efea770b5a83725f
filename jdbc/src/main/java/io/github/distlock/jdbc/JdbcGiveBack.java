package io.github.distlock.jdbc;

import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.github.distlock.spi.LockDurations;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * Gives back, in the background, rows that a failed or abandoned statement may have left held: only the owner's own
 * row can match, so it can free nothing of anyone else's.
 */
final class JdbcGiveBack {

    // the provider's category: where users look for (and configure) its messages
    private static final Log logger = LogFactory.getLog(JdbcLockProvider.class);

    private final JdbcLockRepository repository;
    private final JdbcWorkers workers;
    private final JdbcWatchdog watchdog;
    private final JdbcWaiters waiters;

    JdbcGiveBack(JdbcLockRepository repository, JdbcWorkers workers, JdbcWatchdog watchdog, JdbcWaiters waiters) {
        this.repository = repository;
        this.workers = workers;
        this.watchdog = watchdog;
        this.waiters = waiters;
    }

    /**
     * Frees whatever {@code owner} may hold of {@code key} after a statement whose outcome is unknown (the connection
     * broke, the answer timed out, the caller stopped waiting) or a release that did not get through: tried again every
     * tenth of the lease (50 ms to 1 s) while the failures are themselves of unknown outcome or conflicts, for at most
     * the row's lease (a fixed one) or the watchdog timeout. A failure that is the database's definite answer (an error
     * that will come back every time) ends the retries at once. Only this owner's row can match, so it can free nothing
     * of anyone else's.
     *
     * <p>A watchdog row is left out of the renewal from now on ({@link JdbcWatchdog#unrenew}): were it renewed with the
     * instance's other rows, a give-back that can never get through would keep it held for as long as the provider
     * lives; left out, it expires within the watchdog timeout, which is why the retries may stop then.
     */
    void giveBack(String key, String owner, long leaseNanos, boolean watched) {
        long start = System.nanoTime();
        if (watched) {
            watchdog.unrenew(owner, start);
        }
        long deadline = LockDurations.deadline(start, leaseNanos);
        long period = Math.max(TimeUnit.MILLISECONDS.toNanos(50), Math.min(TimeUnit.SECONDS.toNanos(1), leaseNanos / 10));
        Runnable[] task = new Runnable[1];
        task[0] = () -> {
            try {
                if (repository.releaseRow(key, owner)) {
                    // the key is free: this instance's next waiter need not wait for its poll
                    waiters.wake(key);
                    logger.info("Gave back lock '" + key + "', taken for a call that had already failed or stopped waiting");
                }
            }
            catch (SQLException | RuntimeException ex) {
                boolean retryable = !(ex instanceof SQLException sql) || JdbcDialect.isOutcomeUnknown(sql)
                        || JdbcDialect.isConflict(sql);
                if (retryable && System.nanoTime() - deadline < 0) {
                    workers.scheduleQuietly(task[0], period);
                }
                else if (watched) {
                    logger.warn("Gave up giving back lock '" + key + "' in " + repository.table() + " (owner " + owner
                            + "): " + ex + "; its row is no longer renewed and expires by the database's clock within "
                            + Duration.ofNanos(leaseNanos));
                }
            }
        };
        workers.scheduleQuietly(task[0], 0);
    }
}

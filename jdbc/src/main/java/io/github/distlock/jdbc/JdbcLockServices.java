package io.github.distlock.jdbc;

import java.util.concurrent.ExecutorService;

import org.jspecify.annotations.Nullable;

/**
 * What one provider's acquisitions and handles share: its table's statements, its threads, its watchdog, its
 * give-backs, and the threads that run loss reports.
 *
 * @param repository the lock table's statements
 * @param workers the threads every statement runs on
 * @param watchdog the renewal of watchdog locks
 * @param giveBack the background release of rows left held by a failure
 * @param callbacks runs loss reports: a callback that blocks must not hold up renewals
 * @param waiters this instance's waiters, one line per key
 * @param listener the PostgreSQL listener that wakes them on other instances' releases; {@code null} when releases
 * are not notified (another database, or {@code distlock.jdbc.notify.enabled=false})
 */
record JdbcLockServices(JdbcLockRepository repository, JdbcWorkers workers, JdbcWatchdog watchdog,
        JdbcGiveBack giveBack, ExecutorService callbacks, JdbcWaiters waiters, @Nullable JdbcListener listener) {
}

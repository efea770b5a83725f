package io.github.distlock.jdbc;

import java.sql.SQLException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;

/**
 * The threads that run the statements of acquisitions and releases, and the pauses between a waiter's tries: every
 * statement of this backend runs here, never on a caller's thread.
 */
final class JdbcWorkers {

    private final ScheduledThreadPoolExecutor workers;
    /** Whether the current thread is one of {@link #workers}: their statements need no hand-over to a worker. */
    private final ThreadLocal<Boolean> onWorkerThread = ThreadLocal.withInitial(() -> false);

    JdbcWorkers(int threads) {
        ThreadFactory workerThreads = daemons("distlock-jdbc");
        this.workers = new ScheduledThreadPoolExecutor(threads, task -> workerThreads.newThread(() -> {
            onWorkerThread.set(true);
            task.run();
        }));
        this.workers.setRemoveOnCancelPolicy(true);
    }

    static ThreadFactory daemons(String name) {
        AtomicInteger count = new AtomicInteger();
        return task -> {
            Thread thread = new Thread(task, name + "-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }

    /** Statements to run on a worker. */
    interface SqlCall<T> {
        T call() throws SQLException;
    }

    /**
     * Runs {@code work} on one of this provider's workers and waits for it: so that every statement of this backend
     * runs on the provider's threads, never on a caller's, where a thread-bound DataSource (a routing one, a
     * {@link TransactionAwareDataSourceProxy} inside another wrapper) would hand out the caller's transactional
     * connection. On a worker already, runs it at once (waiting for another worker could wait for itself).
     */
    <T> T onWorker(SqlCall<T> work) throws SQLException {
        if (onWorkerThread.get()) {
            return work.call();
        }
        CompletableFuture<T> result = new CompletableFuture<>();
        execute(() -> {
            try {
                result.complete(work.call());
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
        catch (ExecutionException ex) {
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
    void execute(Runnable task) {
        try {
            workers.execute(task);
        }
        catch (RejectedExecutionException closed) {
            Thread thread = new Thread(task, "distlock-jdbc-closed");
            thread.setDaemon(true);
            thread.start();
        }
    }

    /**
     * Runs {@code task} on a worker after {@code delayNanos}.
     *
     * @throws RejectedExecutionException when the workers are shut down
     */
    ScheduledFuture<?> schedule(Runnable task, long delayNanos) {
        return workers.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
    }

    void scheduleQuietly(Runnable task, long delayNanos) {
        try {
            workers.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
        }
        catch (RejectedExecutionException closing) {
            // closed: the row expires by itself within its lease
        }
    }

    /** Stops taking tasks: those handed over already still run, those waiting for their delay are dropped. */
    void shutdown() {
        // releases already handed to the workers still run (a caller may be waiting for them); waiters' next tries,
        // which wait for their pause, are dropped: their acquisitions fail in the provider's close()
        workers.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        workers.shutdown();
    }
}

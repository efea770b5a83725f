package io.github.distlock;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import io.github.distlock.observation.LockCallOutcome;
import io.github.distlock.spi.LockHandle;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.util.ClassUtils;

/**
 * Gives back the keys of the calls of one {@link DefaultLockTemplate}: at once, after the minimum hold
 * ({@link LockOptions#holdAtLeast()}), or when the thread's transaction completes; and the keys a call took before it
 * failed or was abandoned. Every release is reported ({@link LockNotifier}) and the last one of a call ends it
 * ({@link CallRegistry#end}). Nothing here throws at a caller: the guarded code has finished, and its own outcome is
 * what the caller sees.
 *
 * <p>Keys are released in the reverse order of their taking (the last taken first).
 */
final class LockReleaser {

    private static final boolean TRANSACTIONS_PRESENT = ClassUtils.isPresent(
            "org.springframework.transaction.support.TransactionSynchronizationManager",
            LockReleaser.class.getClassLoader());

    /** The backend, as the scope of this template's {@link LockContext} frames. */
    private final Object scope;
    private final LockNotifier notifier;
    private final CallRegistry registry;
    private final boolean releaseAfterTransaction;
    private volatile ScheduledExecutorService delayedReleases;

    LockReleaser(Object scope, LockNotifier notifier, CallRegistry registry, boolean releaseAfterTransaction) {
        this.scope = scope;
        this.notifier = notifier;
        this.registry = registry;
        this.releaseAfterTransaction = releaseAfterTransaction && TRANSACTIONS_PRESENT;
    }

    /**
     * Releases the locks of a blocking call that has returned: at once, or after the minimum hold, or when the
     * thread's transaction completes. Never throws.
     */
    void releaseAfterCall(ActiveCall call) {
        if (releaseAfterTransaction && TransactionBinding.bind(this, call)) {
            return;
        }
        if (!releaseLater(call)) {
            releaseNow(call);
        }
    }

    /** Releases at once, or schedules the release when the minimum hold is not over; completes when done or scheduled. */
    CompletableFuture<Void> release(ActiveCall call) {
        return releaseLater(call) ? CompletableFuture.completedFuture(null) : releaseAsync(call);
    }

    /** Only loaded when spring-tx is on the class path. */
    private static final class TransactionBinding {

        /** Defers the release to the end of the thread's transaction, if one is active; returns whether it did. */
        static boolean bind(LockReleaser releaser, ActiveCall call) {
            if (!TransactionSynchronizationManager.isSynchronizationActive()) {
                return false;
            }
            for (int i = 0; i < call.keys.length; i++) {
                LockContext.defer(releaser.scope, call, i);
            }
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void afterCompletion(int status) {
                    LockContext.undefer(call);
                    if (!releaser.releaseLater(call)) {
                        releaser.releaseNow(call);
                    }
                }
            });
            return true;
        }
    }

    /** Schedules the release when the minimum hold is not over yet; returns whether it did. */
    private boolean releaseLater(ActiveCall call) {
        LockOptions options = call.options;
        if (options.holdAtLeast() == null) {
            return false;
        }
        long remaining = options.holdAtLeast().toNanos() - (System.nanoTime() - call.acquiredAt);
        if (remaining <= 0) {
            return false;
        }
        try {
            delayedReleases().schedule(() -> releaseAsync(call), remaining, TimeUnit.NANOSECONDS);
        }
        catch (RejectedExecutionException shuttingDown) {
            // the template is shutting down: release now rather than leave the lock renewed for nobody
            return false;
        }
        return true;
    }

    private ScheduledExecutorService delayedReleases() {
        ScheduledExecutorService executor = delayedReleases;
        if (executor == null) {
            synchronized (this) {
                executor = delayedReleases;
                if (executor == null) {
                    executor = Executors.newSingleThreadScheduledExecutor(task -> {
                        Thread thread = new Thread(task, "distlock-delayed-release");
                        thread.setDaemon(true);
                        return thread;
                    });
                    delayedReleases = executor;
                }
            }
        }
        return executor;
    }

    /** Stops the scheduler of delayed releases (minimum hold); releases already due run first. */
    void shutdown() {
        ScheduledExecutorService executor = delayedReleases;
        if (executor != null) {
            executor.shutdown();
        }
    }

    /** Releases every key, waiting for each answer (the caller's thread has nothing else to do). */
    private void releaseNow(ActiveCall call) {
        long acquiredAt = call.acquiredAt;
        for (int i = call.keys.length - 1; i >= 0; i--) {
            released(call, call.keys[i], call.handles[i], acquiredAt, releaseOutcome(call.handles[i]));
        }
    }

    /** Releases every key without blocking; the future completes when all have answered. */
    CompletableFuture<Void> releaseAsync(ActiveCall call) {
        long acquiredAt = call.acquiredAt;
        CompletableFuture<?>[] releases = new CompletableFuture<?>[call.keys.length];
        for (int i = call.keys.length - 1; i >= 0; i--) {
            String key = call.keys[i];
            LockHandle handle = call.handles[i];
            releases[i] = releaseOf(handle).handle((released, failure) -> {
                released(call, key, handle, acquiredAt, (failure != null) ? unwrap(failure) : released);
                return null;
            });
        }
        return CompletableFuture.allOf(releases);
    }

    /**
     * Releases the first {@code count} handles of a call that could not take all its keys (or was abandoned); the
     * future completes, never exceptionally, when every release has answered, and the call has ended with
     * {@code outcome}.
     */
    CompletableFuture<Void> releasePartial(ActiveCall call, int count, LockCallOutcome outcome) {
        CompletableFuture<?>[] releases = new CompletableFuture<?>[count];
        for (int i = 0; i < count; i++) {
            String key = call.keys[i];
            releases[i] = releaseOf(call.handles[i]).handle((released, failure) -> {
                if (failure != null) {
                    LockNotifier.logger.warn("Could not release lock '" + key + "' after another key of the same call "
                            + "could not be taken; the backend keeps trying, and it expires by itself within its "
                            + "lease: " + failure);
                }
                return null;
            });
        }
        return CompletableFuture.allOf(releases).whenComplete((ignored, never) -> registry.end(call, outcome, null));
    }

    private static Object releaseOutcome(LockHandle handle) {
        try {
            return handle.release();
        }
        catch (RuntimeException ex) {
            return ex;
        }
    }

    /** The handle's release, with a provider that throws instead of failing the future treated alike. */
    private static CompletableFuture<Boolean> releaseOf(LockHandle handle) {
        try {
            return handle.releaseAsync();
        }
        catch (RuntimeException ex) {
            return CompletableFuture.failedFuture(ex);
        }
    }

    /** Reports the outcome of one release: {@code Boolean} released or not, or the backend's failure. */
    private void released(ActiveCall call, String fullKey, LockHandle handle, long acquiredAt, Object outcome) {
        LockCallOutcome callOutcome = (outcome instanceof Throwable) ? LockCallOutcome.RELEASE_FAILED
                : (Boolean.TRUE.equals(outcome) && !handle.lostWhileHeld()) ? LockCallOutcome.RELEASED
                : LockCallOutcome.LEASE_LOST;
        try {
            notifier.reportRelease(fullKey, handle, acquiredAt, outcome);
        }
        finally {
            LockCallOutcome ended = call.keyReleased(callOutcome);
            if (ended != null) {
                registry.end(call, ended, (outcome instanceof Throwable failure) ? failure : null);
            }
        }
    }

    static Throwable unwrap(Throwable failure) {
        return (failure instanceof CompletionException && failure.getCause() != null) ? failure.getCause() : failure;
    }
}

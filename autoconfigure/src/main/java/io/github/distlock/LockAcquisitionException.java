package io.github.distlock;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

/**
 * The lock was held by someone else for the whole wait time (or the wait was interrupted): the guarded code did not run.
 */
public class LockAcquisitionException extends DistributedLockException {

    private final Duration waitTime;

    /**
     * @param key the full key of the lock
     * @param waitTime how long the caller was willing to wait
     * @param cause the interruption that ended the wait, or {@code null}
     */
    public LockAcquisitionException(String key, Duration waitTime, @Nullable Throwable cause) {
        super(key, message(key, waitTime, cause), cause);
        this.waitTime = waitTime;
    }

    /**
     * For subclasses that say more about what was waited for.
     *
     * @param key the full key of the lock
     * @param waitTime how long the caller was willing to wait
     * @param message the whole message
     * @param cause the interruption that ended the wait, or {@code null}
     */
    protected LockAcquisitionException(String key, Duration waitTime, String message, @Nullable Throwable cause) {
        super(key, message, cause);
        this.waitTime = waitTime;
    }

    /** How long the caller was willing to wait. */
    public Duration getWaitTime() {
        return waitTime;
    }

    private static String message(String key, Duration waitTime, @Nullable Throwable cause) {
        String waited = waitTime.isZero() ? "in a single try (wait time 0)" : "within the wait time of " + waitTime.toMillis() + " ms";
        String interrupted = (cause instanceof InterruptedException) ? " (interrupted while waiting)" : "";
        return "Could not acquire lock '" + key + "' " + waited + interrupted + ": it is held by another caller";
    }
}

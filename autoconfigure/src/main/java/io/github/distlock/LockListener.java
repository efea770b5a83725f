package io.github.distlock;

/**
 * Observes locks taken through {@link LockTemplate} (and so through {@link DistributedLock}): for metrics, logging or
 * alerts. Declare one as a bean and it is picked up. Listeners only observe: they run after the fact, an exception
 * thrown by one is logged and ignored, and nothing a listener does can keep a lock from being released.
 */
public interface LockListener {

    /** The lock was acquired; the guarded code is about to run. */
    default void onAcquired(LockEvent event) {
    }

    /**
     * The lock was not acquired: it was held by another caller for the whole wait, or the backend failed
     * ({@link LockEvent#failure()} set). The guarded code did not run.
     */
    default void onNotAcquired(LockEvent event) {
    }

    /** The guarded code finished and the lock was released. */
    default void onReleased(LockEvent event) {
    }

    /**
     * The lock was lost: found at release (a fixed lease ran out, or the watchdog could not renew it because Redis was
     * unreachable or restarted), or, for a watchdog lock, found while the guarded code still runs (then called on a
     * background thread, and not again at release). Another caller may hold or have held the lock meanwhile.
     * Called at most once per acquisition.
     */
    default void onLeaseLost(LockEvent event) {
    }

    /**
     * Releasing the lock failed ({@link LockEvent#failure()} says why, usually an unreachable Redis). The lock expires
     * by itself within its lease or the watchdog timeout.
     */
    default void onReleaseFailed(LockEvent event) {
    }
}

package io.github.distlock.spi;

/**
 * One acquired lock, released by the thread that acquired it.
 */
public interface LockHandle {

    /** Token of a fenced acquisition, growing with every acquisition of the key; {@code -1} when not fenced. */
    long fencingToken();

    /**
     * Releases the lock if this owner still holds it.
     *
     * @return {@code true} when released, {@code false} when the lock was no longer this owner's (the lease ran out or
     * renewal failed), in which case nothing is touched: another holder's lock is never released
     * @throws RuntimeException when the backend fails; the lock then expires by itself
     */
    boolean release();

    /**
     * Registers code to run (once, on a backend thread) if the backend learns, while the lock is still held, that it
     * was lost: renewal stopped working or the key was found gone. A backend that cannot tell never calls it; a loss
     * is then only seen by {@link #release()}.
     *
     * @param callback receives a sentence saying how the loss was found
     */
    default void whenLost(java.util.function.Consumer<String> callback) {
    }

    /** Whether {@link #whenLost} has already reported this lock lost. */
    default boolean lostWhileHeld() {
        return false;
    }
}

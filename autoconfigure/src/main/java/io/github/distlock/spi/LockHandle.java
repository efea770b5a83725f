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
}

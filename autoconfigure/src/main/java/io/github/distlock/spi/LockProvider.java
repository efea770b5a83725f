package io.github.distlock.spi;

/**
 * A lock backend. {@link io.github.distlock.LockTemplate} asks it for one lock per call; the Redisson provider is the
 * default, and another backend plugs in by declaring a bean of this type.
 *
 * <p>Contract every backend must keep: at most one holder per key at a time; locks re-enter for the same thread;
 * a released or expired lock can be taken by the next caller; a lock whose holder died expires within its lease (or the
 * renewal timeout).
 */
public interface LockProvider {

    /**
     * Tries to acquire the lock for {@code key}, waiting up to {@code waitNanos}.
     *
     * @param key the full key, prefix included
     * @param waitNanos how long to wait: {@code 0} tries once
     * @param leaseNanos a fixed lease; {@code 0} renews the lock while the holder lives
     * @param fenced whether to hand out a fencing token
     * @return the held lock, or {@code null} when another holder kept it for the whole wait
     * @throws InterruptedException when the waiting thread is interrupted
     * @throws RuntimeException when the backend fails; the lock is then not held
     */
    LockHandle tryAcquire(String key, long waitNanos, long leaseNanos, boolean fenced) throws InterruptedException;
}

package io.github.distlock;

/**
 * The kind of lock a call takes ({@link DistributedLock#type()}, {@link LockOptions#withType(LockType)}).
 *
 * <p>Locks of one key share their backend structure, so a {@code REENTRANT}, a {@code FAIR} and a {@code WRITE} lock
 * of the same key exclude each other, and a {@code READ} lock excludes all three. Use one type per key unless that is
 * what you mean.
 */
public enum LockType {

    /** One holder at a time; waiters are woken in no particular order. The default. */
    REENTRANT,

    /**
     * One holder at a time; waiters get the lock in the order they asked for it. Costs more than {@link #REENTRANT} on
     * a contended key (on Redis, each operation touches every queued waiter).
     */
    FAIR,

    /** Shared: any number of readers at once, while no writer holds the key. Not fenced: readers do not write. */
    READ,

    /** Exclusive against readers and other writers of the same key. */
    WRITE;

    /** Whether a holder of this type excludes every other holder of the key. */
    public boolean exclusive() {
        return this != READ;
    }
}

package io.github.distlock;

/**
 * The kind of lock a call takes ({@link DistributedLock#type()}, {@link LockOptions#withType(LockType)}).
 *
 * <p>Use one family per key: {@code REENTRANT} and {@code FAIR} locks of one key exclude each other; {@code READ} and
 * {@code WRITE} locks of one key form a family of their own. Whether the two families of one key exclude each other
 * depends on the backend: on Redis they do not (the read/write lock lives in {@code <key>:rw}, apart from the
 * other, so that neither can corrupt the other), so never lock one key both ways.
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

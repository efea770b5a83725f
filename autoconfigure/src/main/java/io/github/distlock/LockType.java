package io.github.distlock;

/**
 * The kind of lock a call takes ({@link DistributedLock#type()}, {@link LockOptions#withType(LockType)}).
 *
 * <p>Use one family per key: {@code REENTRANT} and {@code FAIR} locks of one key exclude each other; {@code READ} and
 * {@code WRITE} locks of one key form a family of their own. Whether the two families of one key exclude each other
 * depends on the backend: on Redis they do not (the read/write lock lives in {@code distlock_rw:{<key>}}, apart
 * from the other, so that neither can corrupt the other), so never lock one key both ways.
 */
public enum LockType {

    /** One holder at a time; waiters are woken in no particular order. The default. */
    REENTRANT,

    /**
     * One holder at a time; waiters get the lock in the order they asked for it. On Redis the release hands the lock
     * straight to the first waiter (one round trip and one message, whatever the queue's length), which makes it the
     * lock for a hot key such as a flash sale's product; its key can be {@linkplain LockTemplate#closeKey closed}.
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

package io.github.distlock.idempotency;

import java.time.Duration;

import io.github.distlock.LockBackendException;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * The {@link IdempotencyTemplate}'s access to its {@link IdempotencyStore}: reads that fail the call before its code
 * runs, writes after it ran that never take its outcome from the caller (or, inside a transaction the store joins,
 * say why the transaction must not commit).
 */
final class MarkStore {

    /** The template's category: these are the template's messages, whichever class writes them. */
    private static final Log logger = LogFactory.getLog(IdempotencyTemplate.class);

    private final IdempotencyStore store;

    MarkStore(IdempotencyStore store) {
        this.store = store;
    }

    boolean joinsTransactions() {
        return store.joinsTransactions();
    }

    boolean delete(String markKey) {
        return store.delete(markKey);
    }

    /**
     * Reads the mark: a store that cannot be asked fails the call as an unreachable lock backend does, before the code
     * runs (the mark and the lock usually live in the same Redis).
     */
    String read(String lockKey, String markKey) {
        try {
            return store.get(markKey);
        }
        catch (LockBackendException ex) {
            throw ex;
        }
        catch (RuntimeException ex) {
            throw new LockBackendException(lockKey, ex);
        }
    }

    /**
     * Writes the mark. A failure is logged, not thrown: the code has run and its caller gets its outcome; a duplicate
     * will run again, as after a mark Redis lost.
     */
    void store(String key, String markKey, String mark, Duration ttl) {
        try {
            if (!store.putIfAbsent(markKey, mark, ttl)) {
                logger.warn("Idempotent call '" + key + "' finished after another call with the same key had stored "
                        + "its mark (this call's lock was lost while it ran, say in a pause past the watchdog timeout): "
                        + "duplicates get the other call's outcome, not this one's");
            }
        }
        catch (RuntimeException ex) {
            logger.error("Idempotent call '" + key + "' finished but its mark could not be stored; a duplicate will "
                    + "run again: " + ex, ex);
        }
    }

    /**
     * Writes the mark inside the caller's transaction (a store that joins it). Returns why it could not be written, or
     * {@code null}: then the transaction must not commit, since the work it marks would commit without its mark (a
     * duplicate would do it again).
     */
    String storeInTransaction(String key, String markKey, String mark, Duration ttl) {
        boolean stored;
        try {
            stored = store.putIfAbsent(markKey, mark, ttl);
        }
        catch (RuntimeException ex) {
            logger.debug("Mark of idempotent call '" + key + "' could not be written in the caller's transaction", ex);
            return "Idempotent call '" + key + "' did its work in the caller's transaction, but its mark could not be "
                    + "written in that transaction (" + ex + "): the transaction must roll back the work with it";
        }
        if (!stored) {
            logger.warn("Idempotent call '" + key + "' finished after another call with the same key had stored its "
                    + "mark (this call's lock was lost while it ran, say in a pause past the watchdog timeout): "
                    + "duplicates get the other call's outcome, not this one's");
        }
        return null;
    }
}

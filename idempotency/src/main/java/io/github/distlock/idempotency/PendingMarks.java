package io.github.distlock.idempotency;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.core.Ordered;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Marks waiting for the commit of the thread's transaction, per template (bound under the template's
 * {@link MarkStore}): written after the commit (before the key's lock is released, which waits for the transaction's
 * end), dropped on rollback. Only loaded when spring-tx is on the class path.
 */
final class PendingMarks implements TransactionSynchronization {

    /** The template's category: these are the template's messages, whichever class writes them. */
    private static final Log logger = LogFactory.getLog(IdempotencyTemplate.class);

    private final MarkStore store;
    private final Map<String, Pending> marks = new LinkedHashMap<>();

    /**
     * {@code written}: already written inside the transaction, by a store that joins it; {@code unwritten}: why
     * that write failed (the transaction must not commit), or {@code null}.
     */
    private record Pending(String key, String lockKey, String mark, Duration ttl, boolean written,
            String unwritten) {
    }

    private PendingMarks(MarkStore store) {
        this.store = store;
    }

    static boolean transactionActive() {
        // an actual transaction, not a synchronization scope without one (SUPPORTS outside a transaction): there the
        // code's writes are committed as they happen, and a mark dropped at the scope's "rollback" would let a
        // duplicate repeat them
        return TransactionSynchronizationManager.isSynchronizationActive()
                && TransactionSynchronizationManager.isActualTransactionActive();
    }

    /** The mark of {@code markKey} the thread's transaction will write, or {@code null}. */
    static String find(MarkStore store, String markKey) {
        if (!transactionActive()) {
            return null;
        }
        PendingMarks pending = (PendingMarks) TransactionSynchronizationManager.getResource(store);
        Pending mark = (pending != null) ? pending.marks.get(markKey) : null;
        return (mark != null) ? mark.mark() : null;
    }

    static void add(MarkStore store, String key, String markKey, String lockKey, String mark, Duration ttl,
            boolean written, String unwritten) {
        PendingMarks pending = (PendingMarks) TransactionSynchronizationManager.getResource(store);
        if (pending == null) {
            pending = new PendingMarks(store);
            TransactionSynchronizationManager.bindResource(store, pending);
            TransactionSynchronizationManager.registerSynchronization(pending);
        }
        pending.marks.putIfAbsent(markKey, new Pending(key, lockKey, mark, ttl, written, unwritten));
    }

    /**
     * Fails the commit of a transaction holding work whose mark could not be written in it, even when the caller
     * caught the call's exception: Spring rolls the transaction back and throws this to the committer.
     */
    @Override
    public void beforeCommit(boolean readOnly) {
        for (Pending pending : marks.values()) {
            if (pending.unwritten() != null) {
                throw new IllegalStateException(pending.unwritten());
            }
        }
    }

    /**
     * Before every other synchronization, the lock releases of the transaction among them: registration order is
     * not enough, as a retry in the same transaction re-enters a lock whose deferred release was registered by
     * the first try, before this.
     */
    @Override
    public int getOrder() {
        return Ordered.HIGHEST_PRECEDENCE;
    }

    /** An inner transaction ({@code REQUIRES_NEW}) neither sees nor writes the outer one's marks. */
    @Override
    public void suspend() {
        TransactionSynchronizationManager.unbindResourceIfPossible(store);
    }

    @Override
    public void resume() {
        TransactionSynchronizationManager.bindResource(store, this);
    }

    /**
     * Writes the marks of a commit here rather than in {@code afterCommit}: Spring stops calling
     * {@code afterCommit} callbacks at the first that throws (another library's, say), while every
     * {@code afterCompletion} is called. Ordered first ({@link #getOrder()}), so the mark exists before any lock of
     * the transaction is released and a duplicate can take it.
     */
    @Override
    public void afterCompletion(int status) {
        TransactionSynchronizationManager.unbindResourceIfPossible(store);
        for (Pending pending : marks.values()) {
            Unsettled.remove(pending.lockKey());
        }
        if (status == STATUS_COMMITTED) {
            for (Map.Entry<String, Pending> entry : marks.entrySet()) {
                if (entry.getValue().written()) {
                    continue;
                }
                // never throws: the transaction has committed, and the caller must see that outcome
                store.store(entry.getValue().key(), entry.getKey(), entry.getValue().mark(), entry.getValue().ttl());
            }
        }
        else if (status == STATUS_UNKNOWN && marks.values().stream().anyMatch(pending -> !pending.written())) {
            logger.warn("Transaction of idempotent calls " + keys() + " ended in an unknown state (its commit "
                    + "failed midway): their marks are not stored, so a duplicate runs again; only a unique "
                    + "constraint in the database tells whether the first call's work was committed");
        }
        else if (status == STATUS_ROLLED_BACK && !marks.isEmpty() && logger.isDebugEnabled()) {
            logger.debug("Transaction of idempotent calls " + keys() + " rolled back: no marks stored");
        }
    }

    private List<String> keys() {
        return marks.values().stream().map(Pending::key).toList();
    }
}

package io.github.distlock.idempotency;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockBackendException;
import io.github.distlock.LockCallback;
import io.github.distlock.LockOptions;
import io.github.distlock.LockRunnable;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockDurations;
import org.jspecify.annotations.Nullable;
import org.springframework.core.ResolvableType;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.json.JsonMapper;

/**
 * Runs code at most once per idempotency key while the key's "done" mark lives, and gives duplicates the first call's
 * result: the programmatic twin of {@link Idempotent}, and the engine behind it.
 *
 * <pre>{@code
 * Receipt receipt = idempotency.execute("payment:" + callback.id(), Duration.ofHours(24), Receipt.class,
 *         () -> payments.settle(callback));
 * }</pre>
 *
 * <h2>States of a key</h2>
 * <ul>
 * <li><b>new</b>: no lock, no mark. A call takes the key's lock, finds no mark, runs.
 * <li><b>running</b>: the lock is held (renewed by the watchdog while the holder lives), no mark yet. A duplicate
 * waits for the lock or is refused ({@link WhileRunning}). The lock is the in-progress state: it needs no mark of
 * its own, and when the holder dies its lock expires ({@code distlock.watchdog-timeout}) with no mark written, so the
 * next duplicate runs instead of waiting for a call that will never finish.
 * <li><b>done</b>: the mark exists, carrying the outcome (the result as JSON) in the same Redis value, so the two expire
 * together. Duplicates get the outcome without the lock. When the mark expires the key is new again.
 * <li>A failure stores no mark (unless {@link IdempotencyOptions#storeFailureFor()} names it): the key is new again,
 * and a waiting duplicate runs.
 * <li>Inside a Spring transaction, the code's success is the transaction's commit: the mark waits on the thread and
 * is written when the transaction has committed, still under the lock (which the lock template releases only when
 * the transaction has ended), and it is dropped on rollback. A later call in the same transaction gets the pending
 * result. Code whose work does not join the caller's transaction ({@code REQUIRES_NEW}) is marked when it returns.
 * </ul>
 *
 * <p>Invariant: only a holder of the key's lock writes the key's mark, after the code succeeded and before it
 * releases the lock; and code runs only after its caller read "no mark" while holding that lock. So while the lock
 * is exclusive and the mark lives, the code runs at most once per key. A mark is read in one {@code GET}: a mark that
 * expires while a duplicate reads it is either seen whole (replayed) or not at all (the duplicate takes the lock and
 * reads again). What this cannot cover, and a unique constraint in the database must: a holder whose lock expired
 * under it (a pause longer than the watchdog timeout) still running while a duplicate runs, a mark Redis lost
 * (failover before replication, eviction, flush), and a mark that could not be written after the code succeeded
 * (Redis down at that moment: the caller still gets its result, the error is logged; a store that joins
 * the caller's transaction fails the call instead, so that the transaction rolls the work back).
 *
 * <p>Results are stored through the application's Jackson {@link JsonMapper} and read back as the declared result
 * type (generics included). A result that does not survive that round trip (checked when it is stored) is not
 * stored: duplicates get {@link DuplicateRequestException}, as for a stored failure. A {@code void} result replays
 * as nothing.
 */
public class IdempotencyTemplate {

    /** Namespace of the lock keys (after {@code distlock.key-prefix}). */
    static final String LOCK_NAMESPACE = "idempotent:";

    /**
     * Namespace of the mark keys (after {@code distlock.key-prefix}): differs from {@link #LOCK_NAMESPACE} before the
     * first ':' so that no key's mark is another key's lock.
     */
    static final String MARK_NAMESPACE = "idempotent-mark:";

    private static final boolean TRANSACTIONS_PRESENT = org.springframework.util.ClassUtils.isPresent(
            "org.springframework.transaction.support.TransactionSynchronizationManager",
            IdempotencyTemplate.class.getClassLoader());

    // the template decides when code runs and when its mark is written; reading and writing marks, deferring them to
    // the caller's commit (PendingMarks) and turning outcomes into marks and back are its collaborators' jobs
    private final LockTemplate locks;
    private final MarkStore marks;
    private final ResultReplay results;
    private final JsonMapper json;
    private final Duration defaultWait;
    private final boolean lockHeldUntilTransactionEnds;

    /**
     * A template on a lock template that keeps a lock taken inside a transaction until the transaction has completed
     * ({@code distlock.release-after-transaction}, the default of {@link io.github.distlock.DefaultLockTemplate}).
     *
     * @param locks the lock a key is processed under
     * @param store where the marks live
     * @param json the application's mapper: results are stored and replayed through it
     * @param defaultWait how long a duplicate waits for a running call when its options name no wait: 0 or at least
     * 1 ms (else {@link IllegalArgumentException}); longer than {@link LockDurations#FOR_EVER} is kept as
     * {@code FOR_EVER}
     */
    public IdempotencyTemplate(LockTemplate locks, IdempotencyStore store, JsonMapper json, Duration defaultWait) {
        this(locks, store, json, defaultWait, true);
    }

    /**
     * @param locks the lock a key is processed under
     * @param store where the marks live
     * @param json the application's mapper: results are stored and replayed through it
     * @param defaultWait how long a duplicate waits for a running call when its options name no wait: 0 or at least
     * 1 ms (else {@link IllegalArgumentException}); longer than {@link LockDurations#FOR_EVER} is kept as
     * {@code FOR_EVER}
     * @param lockHeldUntilTransactionEnds whether {@code locks} keeps a lock taken inside a Spring transaction until
     * that transaction completes ({@code distlock.release-after-transaction}). When it does not, a call inside a
     * transaction is refused: its mark waits for the commit, and a duplicate taking the released lock before it would
     * run the code a second time
     */
    public IdempotencyTemplate(LockTemplate locks, IdempotencyStore store, JsonMapper json, Duration defaultWait,
            boolean lockHeldUntilTransactionEnds) {
        this.locks = java.util.Objects.requireNonNull(locks, "locks");
        this.marks = new MarkStore(java.util.Objects.requireNonNull(store, "store"));
        this.json = java.util.Objects.requireNonNull(json, "json");
        this.results = new ResultReplay(json);
        // checked here, not on every call: a wait the lock refuses would otherwise fail each call instead
        this.defaultWait = LockDurations.checked("defaultWait", java.util.Objects.requireNonNull(defaultWait,
                "defaultWait"), "0");
        this.lockHeldUntilTransactionEnds = lockHeldUntilTransactionEnds;
    }

    /**
     * Runs {@code callback} unless a call with {@code key} succeeded within the last {@code ttl}, in which case its
     * result is returned instead; a duplicate arriving while the first call runs waits for it.
     */
    public <T extends @Nullable Object, E extends Throwable> T execute(String key, Duration ttl, Class<T> resultType, LockCallback<T, E> callback)
            throws E {
        return execute(key, IdempotencyOptions.ttl(ttl), ResolvableType.forClass(resultType), callback);
    }

    /** Runs {@code action} unless a call with {@code key} succeeded within the last {@code ttl}. */
    public <E extends Throwable> void run(String key, Duration ttl, LockRunnable<E> action) throws E {
        execute(key, IdempotencyOptions.ttl(ttl), ResolvableType.forClass(void.class), () -> {
            action.run();
            return null;
        });
    }

    /**
     * Runs {@code callback} at most once per {@code key} while its mark lives (see the class description).
     *
     * @param resultType what the result is read back as when replayed (generics included); {@code void} or
     * {@code Void} for none
     * @throws RequestInProgressException when the first call still runs after the wait (or at once with
     * {@link WhileRunning#REFUSE})
     * @throws DuplicateRequestException when the key was processed but its outcome cannot be replayed
     * @throws IdempotencyKeyReusedException when the key was processed for a request with another fingerprint
     * @throws LockBackendException when the lock backend or the mark store cannot be reached (the code did not run)
     * @throws IllegalStateException when the code ran in the caller's transaction but its mark could not be written
     * in it (a store that {@linkplain IdempotencyStore#joinsTransactions() joins transactions}): thrown so that the
     * transaction rolls back the work with it (its commit fails too, should the caller catch this)
     */
    public <T extends @Nullable Object, E extends Throwable> T execute(String key, IdempotencyOptions options, ResolvableType resultType,
            LockCallback<T, E> callback) throws E {
        return execute(key, options, resultType, true, callback);
    }

    /**
     * As {@link #execute(String, IdempotencyOptions, ResolvableType, LockCallback)}, for code whose work may not
     * commit with the caller's transaction.
     *
     * @param joinsCallerTransaction {@code false} when the code's work is committed (or not) by the time it returns,
     * whatever the caller's transaction does: its own transaction ({@code REQUIRES_NEW}) or none
     * ({@code NOT_SUPPORTED}); its mark is then written when it returns, not when the caller's transaction commits
     */
    public <T extends @Nullable Object, E extends Throwable> T execute(String key, IdempotencyOptions options, ResolvableType resultType,
            boolean joinsCallerTransaction, LockCallback<T, E> callback) throws E {
        if (key == null || key.isBlank()) {
            throw new IllegalArgumentException("idempotency key must not be " + (key == null ? "null" : "blank"));
        }
        java.util.Objects.requireNonNull(options, "options");
        String markKey = markKey(key);
        String fingerprint = fingerprint(options.fingerprint());
        JavaType type = results.javaType(resultType);
        // a mark this transaction will write when it commits: this transaction sees its own work, so it sees that too
        String pending = TRANSACTIONS_PRESENT ? PendingMarks.find(marks, markKey) : null;
        if (pending != null) {
            return results.replay(key, pending, fingerprint, type);
        }
        boolean followTransaction = joinsCallerTransaction && TRANSACTIONS_PRESENT && PendingMarks.transactionActive();
        if (!joinsCallerTransaction && marks.joinsTransactions() && TRANSACTIONS_PRESENT
                && PendingMarks.transactionActive()) {
            throw new IllegalStateException("Idempotent call '" + key + "' commits its work in a transaction of its own "
                    + "(REQUIRES_NEW, NOT_SUPPORTED), but it is called inside another transaction and its mark store "
                    + "joins transactions (IdempotencyStore.joinsTransactions()): the mark would roll back with the "
                    + "caller's transaction while the work stays committed, and a duplicate would run it again. Call "
                    + "it outside the transaction, or let its work join the caller's");
        }
        if (followTransaction && !lockHeldUntilTransactionEnds) {
            throw new IllegalStateException("Idempotent call '" + key + "' runs inside a transaction, but the lock "
                    + "template releases its locks before the transaction ends (distlock.release-after-transaction="
                    + "false): the mark is written when the transaction commits, and a duplicate taking the released "
                    + "lock before that would run the code again. Set distlock.release-after-transaction=true, or call "
                    + "it outside the transaction");
        }
        String lockKey = locks.fullKey(LOCK_NAMESPACE + key);
        if (Unsettled.contains(lockKey)) {
            // a duplicate from inside the call itself (a retry loop, an in-process callback), or from a transaction
            // nested in the one whose commit the mark waits for: the lock would let it in (re-entry) before any mark
            // exists, and waiting would wait for itself. (A lock this thread still holds only because its release
            // waits for the transaction's end, after a call that failed, is no reason to refuse: the key is new again.)
            throw new RequestInProgressException(key, Duration.ZERO, null);
        }
        // without the lock: a mark is only ever written after the code succeeded, so one that exists is final
        String mark = marks.read(lockKey, markKey);
        if (mark != null) {
            return results.replay(key, mark, fingerprint, type);
        }
        Duration wait = (options.whileRunning() == WhileRunning.REFUSE) ? Duration.ZERO
                : (options.waitTime() != null) ? options.waitTime() : defaultWait;
        // the watchdog, never a fixed lease: a lease ending under a slow call would let a duplicate run beside it
        LockOptions lockOptions = new LockOptions(wait, LockOptions.WATCHDOG, false, LockType.REENTRANT, null,
                options.name());
        AtomicBoolean locked = new AtomicBoolean();
        try {
            return locks.execute(LOCK_NAMESPACE + key, lockOptions, () -> {
                locked.set(true);
                // again under the lock: the first call may have finished between the read above and the lock
                String current = marks.read(lockKey, markKey);
                if (current != null) {
                    return results.replay(key, current, fingerprint, type);
                }
                Unsettled.add(lockKey);
                boolean markPending = false;
                try {
                    T result = runAndMark(key, markKey, options, fingerprint, type, followTransaction, lockKey, callback);
                    markPending = followTransaction;
                    return result;
                }
                finally {
                    if (!markPending) {
                        Unsettled.remove(lockKey);
                    }
                }
            });
        }
        catch (LockAcquisitionException ex) {
            if (locked.get()) {
                // thrown by the code itself (a lock it takes inside), not by our lock
                throw ex;
            }
            // the first call may have finished just as the wait ran out
            String late = marks.read(lockKey, markKey);
            if (late != null) {
                return results.replay(key, late, fingerprint, type);
            }
            throw new RequestInProgressException(key, wait, ex);
        }
    }

    /**
     * Deletes the mark of {@code key}, so that the next call with it runs (an operator's "process this again").
     * Returns whether there was one.
     */
    public boolean forget(String key) {
        return marks.delete(markKey(key));
    }

    /** The store key of the mark of {@code key}: {@code distlock.key-prefix} + {@value #MARK_NAMESPACE} + key. */
    public String markKey(String key) {
        return locks.fullKey(MARK_NAMESPACE + key);
    }

    private String fingerprint(Object request) {
        return RequestFingerprint.of(request, json);
    }

    private <T, E extends Throwable> T runAndMark(String key, String markKey, IdempotencyOptions options,
            String fingerprint, JavaType type, boolean followTransaction, String lockKey, LockCallback<T, E> callback)
            throws E {
        T result;
        try {
            result = callback.doInLock();
        }
        catch (Throwable failure) {
            if (options.stores(failure)) {
                // at once, transaction or not: storeFailureFor declares the failure final whatever else rolls back
                // (the exception usually rolls the caller's transaction back: following it would store nothing)
                marks.store(key, markKey, results.failedMark(fingerprint, failure), options.ttl());
            }
            throw failure;
        }
        String text = results.returnedMark(key, fingerprint, type, result);
        if (followTransaction && marks.joinsTransactions()) {
            // the store's write joins the caller's transaction: it commits or rolls back with the code's work. Kept
            // on the thread too, so that a later call in this transaction gets this result even if the write failed
            // (rather than running the code a second time in the same transaction)
            String unwritten = marks.storeInTransaction(key, markKey, text, options.ttl());
            PendingMarks.add(marks, key, markKey, lockKey, text, options.ttl(), true, unwritten);
            if (unwritten != null) {
                // the work is in this transaction and its mark is not: the transaction must not commit. Thrown here
                // so that the caller's transaction rolls back, and again before the commit should the caller catch it
                throw new IllegalStateException(unwritten);
            }
        }
        else if (followTransaction) {
            // the code's work commits with the caller's transaction: a mark stored now would answer duplicates for
            // work a rollback may yet undo. The lock stays held until the transaction ends (released after it), so a
            // duplicate arriving before the commit waits, then reads the mark written here after the commit
            PendingMarks.add(marks, key, markKey, lockKey, text, options.ttl(), false, null);
        }
        else {
            marks.store(key, markKey, text, options.ttl());
        }
        return result;
    }
}

package io.github.distlock.idempotent;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.atomic.AtomicBoolean;

import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockBackendException;
import io.github.distlock.LockCallback;
import io.github.distlock.LockOptions;
import io.github.distlock.LockRunnable;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockDurations;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.core.ResolvableType;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;
import tools.jackson.databind.type.TypeFactory;

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

    private static final Log logger = LogFactory.getLog(IdempotencyTemplate.class);

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

    private static final String RETURNED = "RETURNED";
    private static final String FAILED = "FAILED";

    private final LockTemplate locks;
    private final IdempotencyStore store;
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
        this.store = java.util.Objects.requireNonNull(store, "store");
        this.json = java.util.Objects.requireNonNull(json, "json");
        // checked here, not on every call: a wait the lock refuses would otherwise fail each call instead
        this.defaultWait = LockDurations.checked("defaultWait", java.util.Objects.requireNonNull(defaultWait,
                "defaultWait"), "0");
        this.lockHeldUntilTransactionEnds = lockHeldUntilTransactionEnds;
    }

    /**
     * Runs {@code callback} unless a call with {@code key} succeeded within the last {@code ttl}, in which case its
     * result is returned instead; a duplicate arriving while the first call runs waits for it.
     */
    public <T extends @Nullable Object, E extends Throwable> T execute(String key, Duration ttl, Class<T> resultType,
            LockCallback<T, E> callback) throws E {
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
    public <T extends @Nullable Object, E extends Throwable> T execute(String key, IdempotencyOptions options,
            ResolvableType resultType, LockCallback<T, E> callback) throws E {
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
    public <T extends @Nullable Object, E extends Throwable> T execute(String key, IdempotencyOptions options,
            ResolvableType resultType, boolean joinsCallerTransaction, LockCallback<T, E> callback) throws E {
        if (key == null || key.isBlank()) {
            throw new IllegalArgumentException("idempotency key must not be " + (key == null ? "null" : "blank"));
        }
        java.util.Objects.requireNonNull(options, "options");
        String markKey = markKey(key);
        String fingerprint = fingerprint(options.fingerprint());
        JavaType type = javaType(resultType);
        // a mark this transaction will write when it commits: this transaction sees its own work, so it sees that too
        String pending = TRANSACTIONS_PRESENT ? PendingMarks.find(this, markKey) : null;
        if (pending != null) {
            return replay(key, pending, fingerprint, type);
        }
        boolean followTransaction = joinsCallerTransaction && TRANSACTIONS_PRESENT && PendingMarks.transactionActive();
        if (!joinsCallerTransaction && store.joinsTransactions() && TRANSACTIONS_PRESENT
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
        String mark = readMark(lockKey, markKey);
        if (mark != null) {
            return replay(key, mark, fingerprint, type);
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
                String current = readMark(lockKey, markKey);
                if (current != null) {
                    return replay(key, current, fingerprint, type);
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
            String late = readMark(lockKey, markKey);
            if (late != null) {
                return replay(key, late, fingerprint, type);
            }
            throw new RequestInProgressException(key, wait, ex);
        }
    }

    /**
     * Deletes the mark of {@code key}, so that the next call with it runs (an operator's "process this again").
     * Returns whether there was one.
     */
    public boolean forget(String key) {
        return store.delete(markKey(key));
    }

    /** The store key of the mark of {@code key}: {@code distlock.key-prefix} + {@value #MARK_NAMESPACE} + key. */
    public String markKey(String key) {
        return locks.fullKey(MARK_NAMESPACE + key);
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
                ObjectNode mark = mark(FAILED, fingerprint);
                mark.put("failure", failure.getClass().getName());
                mark.put("message", String.valueOf(failure.getMessage()));
                store(key, markKey, json.writeValueAsString(mark), options.ttl());
            }
            throw failure;
        }
        ObjectNode mark = mark(RETURNED, fingerprint);
        mark.put("type", (type != null) ? type.toCanonical() : "void");
        if (type != null) {
            try {
                JsonNode value = json.valueToTree(result);
                // read back now, not when a duplicate comes: a result that can't be replayed — or that reads back as
                // something else (a Long in a Number or a Map<String, Object> comes back as an Integer) — is known
                // at once
                if (result != null) {
                    // through the text, as a duplicate reads it: the tree alone keeps a LongNode that the text loses
                    Object back = json.treeToValue(json.readTree(json.writeValueAsString(value)), type);
                    if (!json.valueToTree(back).equals(value) || !sameTypes(result, back)) {
                        throw new IllegalArgumentException("it reads back as " + back + " ("
                                + ((back != null) ? back.getClass().getName() : "null") + "), not as what was returned");
                    }
                }
                mark.set("value", (value != null) ? value : json.nullNode());
            }
            catch (JacksonException | IllegalArgumentException ex) {
                logger.warn("Result of idempotent call '" + key + "' cannot be stored as " + type + " through JSON ("
                        + ex.getMessage() + "); duplicates get DuplicateRequestException instead of it");
                mark.put("unreplayable", "its result (" + result.getClass().getName() + ") cannot be stored as "
                        + type.toCanonical() + " through JSON");
            }
        }
        String text = json.writeValueAsString(mark);
        if (followTransaction && store.joinsTransactions()) {
            // the store's write joins the caller's transaction: it commits or rolls back with the code's work. Kept
            // on the thread too, so that a later call in this transaction gets this result even if the write failed
            // (rather than running the code a second time in the same transaction)
            String unwritten = storeInTransaction(key, markKey, text, options.ttl());
            PendingMarks.add(this, key, markKey, lockKey, text, options.ttl(), true, unwritten);
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
            PendingMarks.add(this, key, markKey, lockKey, text, options.ttl(), false, null);
        }
        else {
            store(key, markKey, text, options.ttl());
        }
        return result;
    }

    /**
     * Whether {@code back} has the classes {@code result} has, element by element for lists and map values: JSON keeps
     * a number's value but not its class, and an {@code equals} on the replay would fail ({@code 7L} vs {@code 7}).
     */
    private static boolean sameTypes(Object result, Object back) {
        if (result == null || back == null) {
            return result == back;
        }
        if (result instanceof Number && result.getClass() != back.getClass()) {
            return false;
        }
        if (result instanceof java.util.Map<?, ?> map && back instanceof java.util.Map<?, ?> other) {
            for (java.util.Map.Entry<?, ?> entry : map.entrySet()) {
                if (!sameTypes(entry.getValue(), other.get(entry.getKey()))) {
                    return false;
                }
            }
        }
        if (result instanceof java.util.List<?> list && back instanceof java.util.List<?> other
                && list.size() == other.size()) {
            for (int i = 0; i < list.size(); i++) {
                if (!sameTypes(list.get(i), other.get(i))) {
                    return false;
                }
            }
        }
        return true;
    }

    private ObjectNode mark(String outcome, String fingerprint) {
        ObjectNode mark = json.createObjectNode();
        mark.put("outcome", outcome);
        if (fingerprint != null) {
            mark.put("fingerprint", fingerprint);
        }
        return mark;
    }

    /**
     * Writes the mark. A failure is logged, not thrown: the code has run and its caller gets its outcome; a duplicate
     * will run again, as after a mark Redis lost.
     */
    private void store(String key, String markKey, String mark, Duration ttl) {
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
    private String storeInTransaction(String key, String markKey, String mark, Duration ttl) {
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

    /**
     * Reads the mark: a store that cannot be asked fails the call as an unreachable lock backend does, before the code
     * runs (the mark and the lock usually live in the same Redis).
     */
    private String readMark(String lockKey, String markKey) {
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

    @SuppressWarnings("unchecked")
    private <T> T replay(String key, String text, String fingerprint, JavaType type) {
        JsonNode mark;
        try {
            mark = json.readTree(text);
        }
        catch (JacksonException ex) {
            throw new DuplicateRequestException(key, "A call with idempotency key '" + key + "' was processed, but "
                    + "its mark cannot be read", null, ex);
        }
        String stored = mark.hasNonNull("fingerprint") ? mark.get("fingerprint").asString() : null;
        if (fingerprint != null && stored != null && !fingerprint.equals(stored)) {
            throw new IdempotencyKeyReusedException(key);
        }
        if (FAILED.equals(mark.path("outcome").asString(""))) {
            String failure = mark.path("failure").asString("");
            throw new DuplicateRequestException(key, "A call with idempotency key '" + key + "' was processed and "
                    + "failed with " + failure + ": " + mark.path("message").asString(""), failure, null);
        }
        String storedType = mark.path("type").asString("");
        String wanted = (type != null) ? type.toCanonical() : "void";
        if (RETURNED.equals(mark.path("outcome").asString("")) && !storedType.isEmpty() && !storedType.equals(wanted)) {
            // one key used by calls of different kinds: replaying one's result as the other's would make one up
            throw new DuplicateRequestException(key, "A call with idempotency key '" + key + "' was processed by a "
                    + "call returning " + storedType + "; this one returns " + wanted + ", so its result is not "
                    + "replayed. Use distinct keys for different operations", null, null);
        }
        if (mark.hasNonNull("unreplayable")) {
            throw new DuplicateRequestException(key, "A call with idempotency key '" + key + "' was processed, but "
                    + mark.get("unreplayable").asString(), null, null);
        }
        if (type == null || !mark.has("value")) {
            return null;
        }
        try {
            return (T) json.treeToValue(mark.get("value"), type);
        }
        catch (JacksonException ex) {
            throw new DuplicateRequestException(key, "A call with idempotency key '" + key + "' was processed, but "
                    + "its stored result cannot be read as " + type.toCanonical(), null, ex);
        }
    }

    private String fingerprint(Object request) {
        return RequestFingerprint.of(request, json);
    }

    /** Jackson's type for {@code type}, generics resolved as Spring resolved them; {@code null} for no result. */
    private JavaType javaType(ResolvableType type) {
        Class<?> raw = (type != null) ? type.resolve() : null;
        if (raw == null || raw == void.class || raw == Void.class) {
            return null;
        }
        return javaType(json.getTypeFactory(), type);
    }

    static JavaType javaType(TypeFactory types, ResolvableType type) {
        if (type.isArray()) {
            return types.constructArrayType(javaType(types, type.getComponentType()));
        }
        Class<?> raw = type.resolve(Object.class);
        ResolvableType[] generics = type.getGenerics();
        if (generics.length == 0) {
            return types.constructType(raw);
        }
        JavaType[] parameters = new JavaType[generics.length];
        for (int i = 0; i < generics.length; i++) {
            parameters[i] = javaType(types, generics[i]);
        }
        return types.constructParametricType(raw, parameters);
    }

    /**
     * Marks waiting for the commit of the thread's transaction, per template: written after the commit (before the
     * key's lock is released, which waits for the transaction's end), dropped on rollback. Only loaded when spring-tx
     * is on the class path.
     */
    private static final class PendingMarks implements org.springframework.transaction.support.TransactionSynchronization {

        private final IdempotencyTemplate template;
        private final java.util.Map<String, Pending> marks = new java.util.LinkedHashMap<>();

        /**
         * {@code written}: already written inside the transaction, by a store that joins it; {@code unwritten}: why
         * that write failed (the transaction must not commit), or {@code null}.
         */
        private record Pending(String key, String lockKey, String mark, Duration ttl, boolean written,
                String unwritten) {
        }

        private PendingMarks(IdempotencyTemplate template) {
            this.template = template;
        }

        static boolean transactionActive() {
            // an actual transaction, not a synchronization scope without one (SUPPORTS outside a transaction): there the
            // code's writes are committed as they happen, and a mark dropped at the scope's "rollback" would let a
            // duplicate repeat them
            return org.springframework.transaction.support.TransactionSynchronizationManager.isSynchronizationActive()
                    && org.springframework.transaction.support.TransactionSynchronizationManager
                            .isActualTransactionActive();
        }

        /** The mark of {@code markKey} the thread's transaction will write, or {@code null}. */
        static String find(IdempotencyTemplate template, String markKey) {
            if (!transactionActive()) {
                return null;
            }
            PendingMarks pending = (PendingMarks) org.springframework.transaction.support.TransactionSynchronizationManager
                    .getResource(template);
            Pending mark = (pending != null) ? pending.marks.get(markKey) : null;
            return (mark != null) ? mark.mark() : null;
        }

        static void add(IdempotencyTemplate template, String key, String markKey, String lockKey, String mark,
                Duration ttl, boolean written, String unwritten) {
            PendingMarks pending = (PendingMarks) org.springframework.transaction.support.TransactionSynchronizationManager
                    .getResource(template);
            if (pending == null) {
                pending = new PendingMarks(template);
                org.springframework.transaction.support.TransactionSynchronizationManager.bindResource(template,
                        pending);
                org.springframework.transaction.support.TransactionSynchronizationManager.registerSynchronization(
                        pending);
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
            return org.springframework.core.Ordered.HIGHEST_PRECEDENCE;
        }

                /** An inner transaction ({@code REQUIRES_NEW}) neither sees nor writes the outer one's marks. */
        @Override
        public void suspend() {
            org.springframework.transaction.support.TransactionSynchronizationManager.unbindResourceIfPossible(template);
        }

        @Override
        public void resume() {
            org.springframework.transaction.support.TransactionSynchronizationManager.bindResource(template, this);
        }

        /**
         * Writes the marks of a commit here rather than in {@code afterCommit}: Spring stops calling
         * {@code afterCommit} callbacks at the first that throws (another library's, say), while every
         * {@code afterCompletion} is called. Ordered first ({@link #getOrder()}), so the mark exists before any lock of
         * the transaction is released and a duplicate can take it.
         */
        @Override
        public void afterCompletion(int status) {
            org.springframework.transaction.support.TransactionSynchronizationManager.unbindResourceIfPossible(template);
            for (Pending pending : marks.values()) {
                Unsettled.remove(pending.lockKey());
            }
            if (status == STATUS_COMMITTED) {
                for (java.util.Map.Entry<String, Pending> entry : marks.entrySet()) {
                    if (entry.getValue().written()) {
                        continue;
                    }
                    // never throws: the transaction has committed, and the caller must see that outcome
                    template.store(entry.getValue().key(), entry.getKey(), entry.getValue().mark(),
                            entry.getValue().ttl());
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

        private java.util.List<String> keys() {
            return marks.values().stream().map(Pending::key).toList();
        }
    }

    /**
     * The lock keys of idempotent calls on this thread whose outcome is not settled: running, or returned with their
     * mark waiting for the commit of a transaction (the current one or one suspended by a nested transaction).
     */
    private static final class Unsettled {

        private static final ThreadLocal<java.util.Map<String, Integer>> KEYS = ThreadLocal.withInitial(
                java.util.HashMap::new);

        static boolean contains(String lockKey) {
            return KEYS.get().containsKey(lockKey);
        }

        static void add(String lockKey) {
            KEYS.get().merge(lockKey, 1, Integer::sum);
        }

        static void remove(String lockKey) {
            java.util.Map<String, Integer> keys = KEYS.get();
            keys.computeIfPresent(lockKey, (key, count) -> (count > 1) ? count - 1 : null);
            if (keys.isEmpty()) {
                KEYS.remove();
            }
        }
    }
}

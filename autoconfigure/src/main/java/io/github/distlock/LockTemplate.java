package io.github.distlock;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

import org.jspecify.annotations.Nullable;

/**
 * Runs code while holding a distributed lock: the programmatic twin of {@link DistributedLock}, and the engine behind
 * it. Inject it where the key or the options are only known at run time.
 *
 * <pre>{@code
 * Order order = lockTemplate.execute("order:" + userId, () -> orders.place(userId, request));
 *
 * lockTemplate.run("stock:" + productId, LockOptions.waitFor(Duration.ofSeconds(2)), () -> stock.add(productId, 10));
 *
 * if (!lockTemplate.tryRun("report:daily", LockOptions.DEFAULTS, reports::build)) {
 *     log.info("another instance is building the report");
 * }
 * }</pre>
 *
 * <p>Keys are given without the configured prefix ({@code distlock.key-prefix}); the lock is released when the code
 * returns or throws, by its owner only, and the code's own result or exception always reaches the caller. Locks are
 * reentrant per thread. A lock that can't be had throws {@link LockAcquisitionException} ({@code execute}/{@code run})
 * or returns "not acquired" ({@code tryExecute}/{@code tryRun}); an unreachable backend throws
 * {@link LockBackendException} from all of them. The code never runs without the lock.
 *
 * <p>A nested call on a key this thread already holds re-enters the lock: the outer call's lease, owner and fencing
 * token stay as they are, whatever options the nested call names; the backend is only asked whether the outer call
 * still holds the lock (a lost one makes the nested call fail). A nested
 * exclusive call on a key held for {@link LockType#READ} fails at once instead of waiting for itself. Asynchronous
 * calls never re-enter; {@link #executeAsync} on a key this thread holds fails at once (in its future) with
 * {@link NestedLockException}.
 */
public interface LockTemplate {

    /** Runs {@code callback} under the lock for {@code key} with the configured wait and lease, and returns its result. */
    default <T extends @Nullable Object, E extends Throwable> T execute(String key, LockCallback<T, E> callback)
            throws E {
        return execute(key, LockOptions.DEFAULTS, callback);
    }

    /** Runs {@code callback} under the lock for {@code key} with the given options, and returns its result. */
    <T extends @Nullable Object, E extends Throwable> T execute(String key, LockOptions options,
            LockCallback<T, E> callback) throws E;

    /** Runs {@code action} under the lock for {@code key} with the configured wait and lease. */
    default <E extends Throwable> void run(String key, LockRunnable<E> action) throws E {
        run(key, LockOptions.DEFAULTS, action);
    }

    /** Runs {@code action} under the lock for {@code key} with the given options. */
    default <E extends Throwable> void run(String key, LockOptions options, LockRunnable<E> action) throws E {
        execute(key, options, () -> {
            action.run();
            return null;
        });
    }

    /**
     * Runs {@code callback} if the lock for {@code key} can be had with the given options; otherwise returns
     * {@link LockResult#notAcquired()} without running it.
     */
    <T extends @Nullable Object, E extends Throwable> LockResult<T> tryExecute(String key, LockOptions options,
            LockCallback<T, E> callback) throws E;

    /** Runs {@code action} if the lock can be had with the given options; returns whether it ran. */
    default <E extends Throwable> boolean tryRun(String key, LockOptions options, LockRunnable<E> action) throws E {
        return tryExecute(key, options, () -> {
            action.run();
            return Boolean.TRUE;
        }).acquired();
    }

    /**
     * Runs {@code callback} under the locks of all {@code keys} at once, all or none: keys are de-duplicated and taken
     * in one global order (so calls locking {A, B} and {B, A} cannot deadlock), within one wait for them all; if one
     * can't be had, those already taken are released and {@link LockAcquisitionException} names it. Each key is
     * checked like a single key before anything is locked.
     */
    <T extends @Nullable Object, E extends Throwable> T execute(Collection<String> keys, LockOptions options,
            LockCallback<T, E> callback) throws E;

    /** {@link #execute(Collection, LockOptions, LockCallback)}, returning "not acquired" instead of throwing. */
    <T extends @Nullable Object, E extends Throwable> LockResult<T> tryExecute(Collection<String> keys,
            LockOptions options, LockCallback<T, E> callback) throws E;

    /**
     * Runs {@code action} under the lock for {@code key} and keeps the lock until the stage it returns completes
     * (normally, exceptionally or by cancellation), not just until it returns. The acquisition waits on the calling
     * thread as {@link #execute} does (one round trip with the default wait of 0) and {@code action} runs on the
     * calling thread. The returned future completes, after the release, with the stage's outcome; it fails with
     * {@link LockAcquisitionException} or {@link LockBackendException} when the lock could not be had (the action then
     * did not run). Cancelling it cancels the action's stage and releases the lock.
     *
     * <p>Not re-entrant: the lock outlives the calling thread's call, so it is always taken for a new owner. Made where
     * the calling thread holds one of the keys itself (a nested call, or a lock whose release waits for the end of
     * the thread's transaction), it would wait for its own thread; it is refused at once instead: the returned future
     * fails with {@link NestedLockException} naming the key (nothing is thrown), and {@code action} does not run.
     */
    default <T extends @Nullable Object> CompletableFuture<T> executeAsync(String key, LockOptions options,
            Supplier<? extends CompletionStage<T>> action) {
        return executeAsync(List.of(key), options, action);
    }

    /** {@link #executeAsync(String, LockOptions, Supplier)} for several keys, taken as {@link #execute(Collection,
     * LockOptions, LockCallback)} takes them. */
    <T extends @Nullable Object> CompletableFuture<T> executeAsync(Collection<String> keys, LockOptions options,
            Supplier<? extends CompletionStage<T>> action);

    /**
     * Acquires the locks of {@code keys} without blocking the caller (for reactive code): the future completes with
     * the held lock, which the caller must release; exceptionally with {@link LockAcquisitionException} when another
     * holder kept a key for the whole wait, or {@link LockBackendException}. Cancelling the future gives back whatever
     * it still acquires. It may complete on a backend thread: keep what runs there short and non-blocking.
     *
     * <p>Not re-entrant, and not refused on a key the calling thread holds: it never blocks that thread, so its
     * acquisition (another owner's) just queues behind the hold and is granted once the hold is released. Waiting for
     * the future while still holding the key ({@code join()}, {@code block()}) waits for the caller itself.
     *
     * <p>A cancellation that comes after the future completed cancels nothing: the lock is the caller's. Beware of
     * {@code Mono.fromFuture(acquireAsync(...))}: Reactor drops a value that arrives as the subscriber cancels, and
     * the lock is then held (and renewed) for nobody. Hand it on and give it back on cancellation yourself, as the
     * {@code Mono}/{@code Flux} methods of {@link DistributedLock} do.
     */
    CompletableFuture<HeldLock> acquireAsync(Collection<String> keys, LockOptions options);

    /** The backend key a lock for {@code key} uses: the configured prefix followed by {@code key}. */
    String fullKey(String key);

    /**
     * Closes the lock key {@code key} on every instance: callers waiting for it now, and callers asking for it until
     * {@link #reopenKey} is called, fail at once with {@link LockKeyClosedException} (carrying {@code reason}); the
     * current holder keeps its lock until it releases it. For the end of a sale: the buyers still queued on a product's
     * lock get their answer at once. Every backend closes keys: on JDBC, ZooKeeper and etcd (and in the in-memory
     * provider of distlock-test) the close concerns every lock type of the key; on Redis it concerns
     * {@link LockType#FAIR} locks and permits only ({@link LockType#REENTRANT} and read/write callers of the key are
     * not refused), so on Redis close only keys locked as {@code FAIR} or with permits. How soon waiters on other
     * instances hear of it depends on the backend (docs/operations.md, "On each backend"). A third party's
     * {@link io.github.distlock.spi.LockProvider} that cannot close keys throws {@link UnsupportedOperationException}.
     *
     * @param key the key as given to {@code execute} (the prefix is added)
     * @param reason what the waiters are told, such as "sold out"
     * @return how many waiters queued in the backend were told
     */
    long closeKey(String key, String reason);

    /** Reopens a key {@linkplain #closeKey closed} before; nothing happens when it is not closed. */
    void reopenKey(String key);
}

package io.github.distlock;

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
 */
public interface LockTemplate {

    /** Runs {@code callback} under the lock for {@code key} with the configured wait and lease, and returns its result. */
    default <T, E extends Throwable> T execute(String key, LockCallback<T, E> callback) throws E {
        return execute(key, LockOptions.DEFAULTS, callback);
    }

    /** Runs {@code callback} under the lock for {@code key} with the given options, and returns its result. */
    <T, E extends Throwable> T execute(String key, LockOptions options, LockCallback<T, E> callback) throws E;

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
    <T, E extends Throwable> LockResult<T> tryExecute(String key, LockOptions options, LockCallback<T, E> callback) throws E;

    /** Runs {@code action} if the lock can be had with the given options; returns whether it ran. */
    default <E extends Throwable> boolean tryRun(String key, LockOptions options, LockRunnable<E> action) throws E {
        return tryExecute(key, options, () -> {
            action.run();
            return Boolean.TRUE;
        }).acquired();
    }

    /** The Redis key a lock for {@code key} uses: the configured prefix followed by {@code key}. */
    String fullKey(String key);
}

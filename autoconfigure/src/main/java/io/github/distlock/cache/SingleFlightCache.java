package io.github.distlock.cache;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;
import java.util.regex.Pattern;

import io.github.distlock.DistributedLockException;
import io.github.distlock.HeldLock;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import org.jspecify.annotations.Nullable;
import org.springframework.cache.Cache;

/**
 * A {@link Cache} whose missing entries are loaded once across every instance that shares the cache: the path
 * {@code @Cacheable(sync = true)} takes, {@link #get(Object, Callable)} (and {@link #retrieve(Object, Supplier)} for
 * {@code CompletableFuture} and reactive methods), reads the entry first and, when it is missing, takes the entry's
 * distributed lock and asks the cache again under it: the first caller loads and stores the entry, the callers that
 * waited for the lock then find it stored and do not load. Every other operation goes straight to the cache.
 *
 * <p>The wait for the lock is bounded ({@code distlock.cache.single-flight.wait-time}): a caller that waited it out
 * fails with {@link CacheLoadTimeoutException} naming the cache and the key. The loader never runs without the lock:
 * when the lock backend is unreachable the caller fails with {@link io.github.distlock.LockBackendException}. Both
 * reach the caller of a {@code @Cacheable} method as they are (they travel in a
 * {@link Cache.ValueRetrievalException}, which Spring unwraps without consulting its {@code CacheErrorHandler}).
 * On the asynchronous path the returned future fails with them instead; Spring hands such a failure to the
 * {@code CacheErrorHandler}, and one that swallows it (rather than rethrow, as Spring's default does) makes Spring call
 * a {@code CompletableFuture} or reactive method itself, without the lock.
 * The lock is renewed by the watchdog while the loader runs, so a slow load keeps it, and a dead loader's lock expires
 * after {@code distlock.watchdog-timeout}.
 *
 * <p>The lock's key is {@code cache:<cache name>:<key>} when the cache name is made of letters, digits, {@code .},
 * {@code _} and {@code -}, the key's text of those and {@code : / @ = ,}, and the whole is at most
 * {@value #MAX_PLAIN_KEY_LENGTH} characters; otherwise it is {@code cache#} followed by the SHA-256 (hex) of the
 * cache name and the key's text, so that a long key or one with spaces, braces or other characters still names one
 * lock on every backend. The key's text is its {@code toString()} (arrays: their elements'); it must be the same on
 * every instance for equal keys (strings, numbers, records, Spring's {@code SimpleKey} of such). A key whose class
 * has no {@code toString()} of its own (its text would be an object identity, another lock on every call) is
 * refused with {@link IllegalArgumentException}.
 */
public final class SingleFlightCache implements Cache {

    /** The longest lock key written as it is; longer ones are hashed. */
    public static final int MAX_PLAIN_KEY_LENGTH = 200;

    private static final Pattern PLAIN_NAME = Pattern.compile("[A-Za-z0-9._-]+");

    private static final Pattern PLAIN_KEY = Pattern.compile("[A-Za-z0-9._:/@=,-]+");

    private final Cache delegate;

    private final Supplier<LockTemplate> locks;

    private final Duration waitTime;

    private final LockOptions options;

    /**
     * @param delegate the cache that stores the entries
     * @param locks the lock template, looked up at the first load
     * @param waitTime how long a caller waits for another caller's load before failing
     */
    public SingleFlightCache(Cache delegate, Supplier<LockTemplate> locks, Duration waitTime) {
        this.delegate = delegate;
        this.locks = locks;
        this.waitTime = waitTime;
        // watchdog: the lock lasts as long as the load, whatever distlock.lease-time says for other calls
        this.options = LockOptions.waitFor(waitTime).withLeaseTime(LockOptions.WATCHDOG)
                .withName("cache:" + delegate.getName());
    }

    /** The cache that stores the entries. */
    public Cache getDelegate() {
        return delegate;
    }

    @Override
    public String getName() {
        return delegate.getName();
    }

    @Override
    public Object getNativeCache() {
        return delegate.getNativeCache();
    }

    @Override
    public @Nullable ValueWrapper get(Object key) {
        return delegate.get(key);
    }

    @Override
    public <T> @Nullable T get(Object key, @Nullable Class<T> type) {
        return delegate.get(key, type);
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> @Nullable T get(Object key, Callable<T> valueLoader) {
        // a stored entry is read without the lock: only a missing one costs a lock round trip
        ValueWrapper stored = delegate.get(key);
        if (stored != null) {
            return (T) stored.get();
        }
        String lockKey;
        try {
            lockKey = lockKey(delegate.getName(), key);
        }
        catch (IllegalArgumentException ex) {
            throw new ValueRetrievalException(key, valueLoader, ex);
        }
        try {
            // asked again under the lock: a caller that waited finds what the loader stored and loads nothing
            return locks.get().execute(lockKey, options, () -> delegate.get(key, valueLoader));
        }
        catch (DistributedLockException ex) {
            // the loader's own failures come wrapped by the cache; this is the lock's, reported as the load's failure
            // so that no CacheErrorHandler turns it into a load without the lock
            throw new ValueRetrievalException(key, valueLoader, failure(key, ex));
        }
    }

    @Override
    public @Nullable CompletableFuture<?> retrieve(Object key) {
        return delegate.retrieve(key);
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> CompletableFuture<T> retrieve(Object key, Supplier<CompletableFuture<T>> valueLoader) {
        CompletableFuture<?> stored = delegate.retrieve(key);
        if (stored == null) {
            return lockedRetrieve(key, valueLoader);
        }
        return stored.thenCompose(value -> (value != null)
                ? CompletableFuture.completedFuture((T) ((value instanceof ValueWrapper wrapper) ? wrapper.get() : value))
                : lockedRetrieve(key, valueLoader));
    }

    private <T> CompletableFuture<T> lockedRetrieve(Object key, Supplier<CompletableFuture<T>> valueLoader) {
        String lockKey;
        try {
            lockKey = lockKey(delegate.getName(), key);
        }
        catch (IllegalArgumentException ex) {
            return CompletableFuture.failedFuture(ex);
        }
        CompletableFuture<HeldLock> held = locks.get().acquireAsync(List.of(lockKey), options);
        return held.handle((lock, failure) -> (failure != null)
                ? CompletableFuture.<T>failedFuture(failure(key, unwrap(failure)))
                : loadAndRelease(lock, key, valueLoader)).thenCompose(stage -> stage);
    }

    private <T> CompletableFuture<T> loadAndRelease(HeldLock lock, Object key,
            Supplier<CompletableFuture<T>> valueLoader) {
        CompletableFuture<T> load;
        try {
            load = delegate.retrieve(key, valueLoader);
        }
        catch (RuntimeException ex) {
            load = CompletableFuture.failedFuture(ex);
        }
        // completes after the release, so that a caller's next call never queues behind its own lock
        return load.handle((value, failure) -> lock.releaseAsync().thenCompose(released -> (failure != null)
                ? CompletableFuture.<T>failedFuture(unwrap(failure))
                : CompletableFuture.completedFuture(value))).thenCompose(stage -> stage);
    }

    @Override
    public void put(Object key, @Nullable Object value) {
        delegate.put(key, value);
    }

    @Override
    public @Nullable ValueWrapper putIfAbsent(Object key, @Nullable Object value) {
        return delegate.putIfAbsent(key, value);
    }

    @Override
    public void evict(Object key) {
        delegate.evict(key);
    }

    @Override
    public boolean evictIfPresent(Object key) {
        return delegate.evictIfPresent(key);
    }

    @Override
    public void clear() {
        delegate.clear();
    }

    @Override
    public boolean invalidate() {
        return delegate.invalidate();
    }

    @Override
    public String toString() {
        return "SingleFlightCache[" + delegate + "]";
    }

    private Throwable failure(Object key, Throwable failure) {
        if (failure instanceof LockAcquisitionException timedOut && !(timedOut.getCause() instanceof InterruptedException)
                && !(failure instanceof CacheLoadTimeoutException)) {
            return new CacheLoadTimeoutException(delegate.getName(), key, timedOut.getKey(), waitTime);
        }
        return failure;
    }

    private static Throwable unwrap(Throwable failure) {
        Throwable cause = failure;
        while (cause instanceof CompletionException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }

    /**
     * The lock key (without {@code distlock.key-prefix}) of the entry {@code key} of the cache {@code cacheName}, as
     * described on this class.
     *
     * @throws IllegalArgumentException naming the cache when the key's class has no {@code toString()} of its own
     */
    public static String lockKey(String cacheName, Object key) {
        String text = keyText(cacheName, key);
        String plain = "cache:" + cacheName + ":" + text;
        if (plain.length() <= MAX_PLAIN_KEY_LENGTH && PLAIN_NAME.matcher(cacheName).matches()
                && PLAIN_KEY.matcher(text).matches()) {
            return plain;
        }
        // the name's length first: ("a:b", "c") and ("a", "b:c") must not meet
        return "cache#" + sha256(cacheName.length() + ":" + cacheName + ":" + text);
    }

    private static String keyText(String cacheName, Object key) {
        if (key.getClass().isArray()) {
            String elements = Arrays.deepToString(new Object[] {key});
            return elements.substring(1, elements.length() - 1);
        }
        if (!overridesToString(key.getClass())) {
            throw new IllegalArgumentException("Cache '" + cacheName + "': a key of type " + key.getClass().getName()
                    + " has no toString() of its own, so its text is an object identity that differs on every "
                    + "instance and cannot name the entry's lock (distlock.cache.single-flight.enabled); use a key "
                    + "with a content-based toString() (a String, a number, a record)");
        }
        return key.toString();
    }

    private static boolean overridesToString(Class<?> type) {
        try {
            return type.getMethod("toString").getDeclaringClass() != Object.class;
        }
        catch (NoSuchMethodException ex) {
            return false;
        }
    }

    private static String sha256(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
        }
        catch (NoSuchAlgorithmException ex) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", ex);
        }
    }
}

package io.github.distlock.integration;

import java.time.Duration;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * A Spring Integration {@link org.springframework.integration.support.locks.LockRegistry} on distlock: its locks are
 * held in whichever backend distlock is configured with (Redis, a database, ZooKeeper, etcd), through the
 * {@link LockTemplate}, so aggregators, {@code LockRequestHandlerAdvice} and {@code LockRegistryLeaderInitiator} run on
 * any distlock backend and their locks show in distlock's metrics, listeners and actuator endpoint.
 *
 * <p>A registry key becomes the distlock key {@code keyPrefix + String.valueOf(lockKey)}, and the backend stores it
 * behind {@code distlock.key-prefix} as every distlock key: with the defaults, {@code obtain("orders")} locks
 * {@code lock:integration:orders}. Keys are compared by their text: {@code 42} and {@code "42"} are one lock.
 *
 * <p>{@link #obtain} returns one {@link DistlockLock} per key until {@link #expireUnusedOlderThan} forgets it;
 * its semantics (thread ownership, re-entry, waits, fencing) are described there.
 *
 * <p>Renewal: without a ttl every lock is renewed by distlock's watchdog while held, so nothing needs to call
 * {@link #renewLock(Object)}; it checks that the calling thread still holds the lock in the backend and throws when
 * not. A lease can't be changed on a held lock: {@link #renewLock(Object, Duration)} is not supported.
 */
public class DistlockLockRegistry
        implements ExpirableLockRegistry<DistlockLock>, RenewableLockRegistry<DistlockLock> {

    /** The default {@link #DistlockLockRegistry(LockTemplate, String, boolean) key prefix}. */
    public static final String DEFAULT_KEY_PREFIX = "integration:";

    /** What the registry's lock calls are called in distlock's metrics, traces and actuator endpoint. */
    public static final String CALL_NAME = "spring-integration";

    private final LockTemplate template;

    private final String keyPrefix;

    private final LockOptions options;

    private final ConcurrentMap<String, DistlockLock> locks = new ConcurrentHashMap<>();

    /** A registry with the {@link #DEFAULT_KEY_PREFIX}, unfenced. */
    public DistlockLockRegistry(LockTemplate template) {
        this(template, DEFAULT_KEY_PREFIX, false);
    }

    /**
     * @param template the distlock template whose backend holds the locks
     * @param keyPrefix put before every registry key (after {@code distlock.key-prefix}), to keep these keys apart
     * from the application's other lock keys; may be empty
     * @param fenced whether every acquisition takes a fencing token ({@link DistlockLock#fencingToken()}); the backend
     * must support fenced locks (every distlock backend does)
     */
    public DistlockLockRegistry(LockTemplate template, String keyPrefix, boolean fenced) {
        this.template = Objects.requireNonNull(template, "template");
        this.keyPrefix = Objects.requireNonNull(keyPrefix, "keyPrefix");
        this.options = new LockOptions(null, LockOptions.WATCHDOG, fenced).withName(CALL_NAME);
    }

    /**
     * The lock of {@code lockKey}: the same instance for the same key until it is expired.
     *
     * @throws IllegalArgumentException when {@code lockKey} is {@code null} or its text is blank
     */
    @Override
    public DistlockLock obtain(Object lockKey) {
        String key = key(lockKey);
        return locks.computeIfAbsent(key, k -> new DistlockLock(template, k, options));
    }

    /** The distlock key (without {@code distlock.key-prefix}) a registry key is locked under. */
    public String key(Object lockKey) {
        if (lockKey == null) {
            throw new IllegalArgumentException("DistlockLockRegistry.obtain: lockKey must not be null");
        }
        String text = lockKey.toString();
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("DistlockLockRegistry.obtain: lockKey must not be blank, was '" + text
                    + "'");
        }
        return keyPrefix + text;
    }

    /**
     * The fencing token of the calling thread's hold of {@code lockKey}, or empty when it holds none or the registry is
     * not fenced: for a write that storage can refuse from a holder whose lease ran out.
     */
    public OptionalLong fencingToken(Object lockKey) {
        DistlockLock lock = locks.get(key(lockKey));
        return (lock != null) ? lock.fencingToken() : OptionalLong.empty();
    }

    /** Forgets the locks no thread holds that were last used more than {@code age} milliseconds ago. */
    @Override
    public void expireUnusedOlderThan(long age) {
        long now = System.currentTimeMillis();
        locks.values().removeIf(lock -> now - lock.lastUsed > age && !lock.isLocked());
    }

    /**
     * Checks that the calling thread holds {@code lockKey}'s lock and that the backend still has it as this owner's;
     * renewing is the watchdog's work (every {@code distlock.watchdog-timeout / 3}), so there is nothing else to do.
     *
     * @throws IllegalMonitorStateException when the calling thread does not hold the lock
     * @throws IllegalStateException when the backend no longer has it as this owner's
     * @throws UnsupportedOperationException when the lock was taken with a fixed ttl, which can't be extended
     */
    @Override
    public void renewLock(Object lockKey) {
        DistlockLock lock = locks.get(key(lockKey));
        if (lock == null) {
            throw new IllegalMonitorStateException("The current thread does not hold the lock '"
                    + template.fullKey(key(lockKey)) + "', so it can't renew it");
        }
        lock.checkRenewable();
    }

    /**
     * Not supported: a held lock's lease is either renewed by the watchdog (no ttl) or fixed when it was taken.
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    public void renewLock(Object lockKey, Duration ttl) {
        throw new UnsupportedOperationException("DistlockLockRegistry.renewLock(lockKey, ttl): distlock can't set a "
                + "new ttl on a held lock; locks taken without a ttl are renewed by the watchdog while held "
                + "(distlock.watchdog-timeout), renewLock(lockKey) checks that one is still held");
    }

    @Override
    public String toString() {
        return "DistlockLockRegistry[keyPrefix='" + keyPrefix + "', locks=" + locks.size() + "]";
    }
}

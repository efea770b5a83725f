package io.github.distlock.benchmarks;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/**
 * One acquire + release cycle per implementation, with like-for-like settings, shared by the JMH benchmarks and the
 * stand-alone harnesses so they all measure the same code.
 */
public final class LockCycles {

    /** The fixed lease of the "fixed" cases: long enough never to expire during a cycle. */
    public static final long FIXED_LEASE_MS = 30_000;

    /** The wait of the contended cases: long enough that every call gets the lock. */
    public static final long WAIT_MS = 30_000;

    /** distlock's default key prefix; the raw cases use the same Redis keys. */
    static final String PREFIX = "lock:";

    private LockCycles() {
    }

    /** Who takes the lock. */
    public enum Impl {
        /** {@code RLock.tryLock(wait, lease, ms)} + {@code unlock()} on the application's Redisson client. */
        REDISSON,
        /** {@link LockTemplate#execute(String, LockOptions, io.github.distlock.LockCallback)}. */
        TEMPLATE,
        /** A {@code @DistributedLock} method called through the Spring proxy, key {@code 'bench:' + #id}. */
        ANNOTATION,
        /** {@code SET key token NX PX} + Lua compare-and-delete over Lettuce: the floor. */
        RAW,
        /**
         * {@link LockTemplate#execute(java.util.Collection, LockOptions, io.github.distlock.LockCallback)} on two keys,
         * {@code bench:<id>:a} and {@code bench:<id>:b}: taken one after the other, released in reverse order.
         */
        MULTI,
        /**
         * A nested {@link LockTemplate#execute} on the key the outer call holds: distlock re-enters in the template,
         * after asking the backend once whether the outer lock is still held.
         */
        TEMPLATE_NESTED,
        /** {@code tryLock}, {@code tryLock} again, {@code unlock} twice on one Redisson lock: Redisson's own re-entry. */
        REDISSON_NESTED;

        static Impl of(String name) {
            return valueOf(name.toUpperCase(Locale.ROOT).replace('-', '_'));
        }

        /** Whether the cycle can take every {@link LockType} (the annotated and raw cycles take REENTRANT only). */
        public boolean takesTypes() {
            return this != ANNOTATION && this != RAW;
        }
    }

    /** The lock type of a benchmark parameter ({@code reentrant}, {@code fair}, {@code read}, {@code write}). */
    static LockType type(String name) {
        return LockType.valueOf(name.toUpperCase(Locale.ROOT));
    }

    /** Lease of the cycle. */
    public enum Lease {
        /** No lease: Redisson's watchdog renews the lock while it is held. */
        WATCHDOG,
        /** A fixed 30 s lease, no renewal. */
        FIXED;

        static Lease of(String name) {
            return valueOf(name.toUpperCase(Locale.ROOT));
        }
    }

    /** One acquire + release of the lock for {@code id}; {@code true} when the lock was had. */
    @FunctionalInterface
    public interface Cycle {
        boolean run(String id) throws InterruptedException;
    }

    /**
     * The cycle of {@code impl}.
     *
     * @param wait whether to wait up to {@link #WAIT_MS} (contended key) or try once
     */
    public static Cycle cycle(BenchEnvironment env, Impl impl, Lease lease, boolean wait) {
        return cycle(env, impl, lease, wait, LockType.REENTRANT);
    }

    /**
     * The cycle of {@code impl} with locks of {@code type}.
     *
     * @param wait whether to wait up to {@link #WAIT_MS} (contended key) or try once
     * @throws IllegalArgumentException when {@code impl} cannot take {@code type} ({@link Impl#takesTypes()})
     */
    public static Cycle cycle(BenchEnvironment env, Impl impl, Lease lease, boolean wait, LockType type) {
        if (type != LockType.REENTRANT && !impl.takesTypes()) {
            throw new IllegalArgumentException(impl + " takes REENTRANT locks only, not " + type);
        }
        return switch (impl) {
            case REDISSON -> redisson(env.redisson(), lease, wait, type);
            case TEMPLATE -> template(env.lockTemplate(), lease, wait, type);
            case ANNOTATION -> annotation(env.lockedService(), lease, wait);
            case RAW -> raw(env.rawLocks(), wait);
            case MULTI -> multi(env.lockTemplate(), lease, wait, type);
            case TEMPLATE_NESTED -> templateNested(env.lockTemplate(), lease, wait, type);
            case REDISSON_NESTED -> redissonNested(env.redisson(), lease, wait, type);
        };
    }

    /** The Redisson lock object distlock's provider uses for {@code type}. */
    static RLock redissonLock(RedissonClient redisson, String name, LockType type) {
        return switch (type) {
            case REENTRANT -> redisson.getLock(name);
            case FAIR -> redisson.getFairLock(name);
            case READ -> redisson.getReadWriteLock(name).readLock();
            case WRITE -> redisson.getReadWriteLock(name).writeLock();
        };
    }

    /**
     * Takes {@code lock} (wait up to {@link #WAIT_MS}, watchdog lease), runs {@code body} and releases it: the Redisson
     * cycle of the harnesses whose body times the hand-offs; {@code false} when the lock was not had within the wait.
     */
    static boolean waitWatchdogRun(RLock lock, Runnable body) throws InterruptedException {
        if (!lock.tryLock(WAIT_MS, -1, TimeUnit.MILLISECONDS)) {
            return false;
        }
        try {
            body.run();
        }
        finally {
            lock.unlock();
        }
        return true;
    }

    private static Cycle redisson(RedissonClient redisson, Lease lease, boolean wait, LockType type) {
        long waitMs = wait ? WAIT_MS : 0;
        long leaseMs = (lease == Lease.FIXED) ? FIXED_LEASE_MS : -1;
        return id -> {
            RLock lock = redissonLock(redisson, PREFIX + "bench:" + id, type);
            if (lock.tryLock(waitMs, leaseMs, TimeUnit.MILLISECONDS)) {
                lock.unlock();
                return true;
            }
            return false;
        };
    }

    private static Cycle redissonNested(RedissonClient redisson, Lease lease, boolean wait, LockType type) {
        long waitMs = wait ? WAIT_MS : 0;
        long leaseMs = (lease == Lease.FIXED) ? FIXED_LEASE_MS : -1;
        return id -> {
            RLock lock = redissonLock(redisson, PREFIX + "bench:" + id, type);
            if (!lock.tryLock(waitMs, leaseMs, TimeUnit.MILLISECONDS)) {
                return false;
            }
            try {
                // re-entry: Redisson runs its lock script again (hincrby on the holder's field), one round trip, and
                // the inner unlock another
                if (!lock.tryLock(waitMs, leaseMs, TimeUnit.MILLISECONDS)) {
                    return false;
                }
                lock.unlock();
                return true;
            }
            finally {
                lock.unlock();
            }
        };
    }

    private static LockOptions options(Lease lease, boolean wait, LockType type) {
        return new LockOptions(
                Duration.ofMillis(wait ? WAIT_MS : 0),
                (lease == Lease.FIXED) ? Duration.ofMillis(FIXED_LEASE_MS) : LockOptions.WATCHDOG,
                false).withType(type);
    }

    private static Cycle template(LockTemplate template, Lease lease, boolean wait, LockType type) {
        LockOptions options = options(lease, wait, type);
        // execute, like the annotation: a failed acquisition throws LockAcquisitionException
        return id -> template.execute("bench:" + id, options, () -> 1) == 1;
    }

    private static Cycle templateNested(LockTemplate template, Lease lease, boolean wait, LockType type) {
        LockOptions options = options(lease, wait, type);
        return id -> {
            String key = "bench:" + id;
            return template.execute(key, options, () -> template.execute(key, options, () -> 1)) == 1;
        };
    }

    private static Cycle multi(LockTemplate template, Lease lease, boolean wait, LockType type) {
        LockOptions options = options(lease, wait, type);
        return id -> template.execute(List.of("bench:" + id + ":a", "bench:" + id + ":b"), options, () -> 1) == 1;
    }

    private static Cycle annotation(LockedService service, Lease lease, boolean wait) {
        // a failed one-try acquisition throws LockAcquisitionException, which the benchmark must see as a failure
        if (lease == Lease.FIXED) {
            return wait ? id -> service.waitFixed(id) == 1 : id -> service.tryOnceFixed(id) == 1;
        }
        return wait ? id -> service.waitWatchdog(id) == 1 : id -> service.tryOnceWatchdog(id) == 1;
    }

    private static Cycle raw(RawLockClient raw, boolean wait) {
        long waitNanos = TimeUnit.MILLISECONDS.toNanos(wait ? WAIT_MS : 0);
        return id -> {
            String key = PREFIX + "bench:" + id;
            String token = RawLockClient.threadToken();
            if (raw.tryLock(key, token, waitNanos)) {
                raw.unlock(key, token);
                return true;
            }
            return false;
        };
    }
}

package io.github.distlock.benchmarks;

import java.util.Locale;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
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
        RAW;

        static Impl of(String name) {
            return valueOf(name.toUpperCase(Locale.ROOT));
        }
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
        return switch (impl) {
            case REDISSON -> redisson(env.redisson(), lease, wait);
            case TEMPLATE -> template(env.lockTemplate(), lease, wait);
            case ANNOTATION -> annotation(env.lockedService(), lease, wait);
            case RAW -> raw(env.rawLocks(), wait);
        };
    }

    private static Cycle redisson(RedissonClient redisson, Lease lease, boolean wait) {
        long waitMs = wait ? WAIT_MS : 0;
        long leaseMs = (lease == Lease.FIXED) ? FIXED_LEASE_MS : -1;
        return id -> {
            RLock lock = redisson.getLock(PREFIX + "bench:" + id);
            if (lock.tryLock(waitMs, leaseMs, TimeUnit.MILLISECONDS)) {
                lock.unlock();
                return true;
            }
            return false;
        };
    }

    private static Cycle template(LockTemplate template, Lease lease, boolean wait) {
        LockOptions options = new LockOptions(
                java.time.Duration.ofMillis(wait ? WAIT_MS : 0),
                (lease == Lease.FIXED) ? java.time.Duration.ofMillis(FIXED_LEASE_MS) : LockOptions.WATCHDOG,
                false);
        // execute, like the annotation: a failed acquisition throws LockAcquisitionException
        return id -> template.execute("bench:" + id, options, () -> 1) == 1;
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

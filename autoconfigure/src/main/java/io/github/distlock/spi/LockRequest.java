package io.github.distlock.spi;

import java.util.Objects;

import io.github.distlock.LockType;

/**
 * One acquisition asked of a {@link LockProvider}.
 *
 * @param key the full key, prefix included; neither null nor blank
 * @param waitNanos how long to wait: {@code 0} tries once; more than {@link LockDurations#FOR_EVER_NANOS} is taken as
 * that (waits until the lock is free)
 * @param leaseNanos a fixed lease, at least one millisecond; {@code 0} renews the lock while the holder lives; more than
 * {@link LockDurations#FOR_EVER_NANOS} is taken as that (kept until released)
 * @param fenced whether the handle must carry a fencing token
 * @param type the kind of lock; one the provider {@linkplain LockProvider#supports supports}
 * @param owner who holds the lock once acquired; unique per call
 * @param permits how many owners may hold the key at once: {@code 1} for a lock, more for a semaphore (asked only of a
 * provider that {@linkplain LockProvider#supportsPermits supports permits}, REENTRANT and unfenced)
 */
public record LockRequest(String key, long waitNanos, long leaseNanos, boolean fenced, LockType type, LockOwner owner,
        int permits) {

    /** Smallest fixed lease a backend is asked for: Redis and most stores count leases in whole milliseconds. */
    public static final long MIN_LEASE_NANOS = LockDurations.ONE_MILLI_NANOS;

    /** Checks what every backend relies on, and caps the times at {@link LockDurations#FOR_EVER_NANOS}. */
    public LockRequest {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(owner, "owner");
        Objects.requireNonNull(type, "type");
        if (waitNanos < 0) {
            throw new IllegalArgumentException("waitNanos must not be negative, was " + waitNanos);
        }
        if (leaseNanos != 0 && leaseNanos < MIN_LEASE_NANOS) {
            throw new IllegalArgumentException("leaseNanos must be 0 (watchdog) or at least 1 ms, was " + leaseNanos);
        }
        if (permits < 1) {
            throw new IllegalArgumentException("permits must be at least 1, was " + permits);
        }
        // capped here so that no backend's rounding or deadline can overflow into a negative lease or a past deadline
        waitNanos = Math.min(waitNanos, LockDurations.FOR_EVER_NANOS);
        leaseNanos = Math.min(leaseNanos, LockDurations.FOR_EVER_NANOS);
    }

    /** A lock (one permit). */
    public LockRequest(String key, long waitNanos, long leaseNanos, boolean fenced, LockType type, LockOwner owner) {
        this(key, waitNanos, leaseNanos, fenced, type, owner, 1);
    }

    /** A {@link LockType#REENTRANT} lock. */
    public LockRequest(String key, long waitNanos, long leaseNanos, boolean fenced, LockOwner owner) {
        this(key, waitNanos, leaseNanos, fenced, LockType.REENTRANT, owner);
    }

    /** Whether the lock is renewed while held instead of expiring after a fixed lease. */
    public boolean watchdog() {
        return leaseNanos == 0;
    }
}

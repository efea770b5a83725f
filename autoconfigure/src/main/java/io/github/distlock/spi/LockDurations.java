package io.github.distlock.spi;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;

/**
 * The one conversion of lock durations, from what users write (annotation attributes, {@code LockOptions},
 * {@code Duration} properties) to what each backend counts in, with arithmetic that never overflows.
 *
 * <p>What the values mean, everywhere:
 * <ul>
 * <li><b>0</b>: a wait of 0 tries once; a lease of 0 is the watchdog (renewed while the holder lives); a minimum hold
 * of 0 is none.</li>
 * <li><b>Between 0 and 1 ms</b> (exclusive): refused where users write it ({@link #checked}), naming the method,
 * attribute or property: backends count leases in whole milliseconds, and rounding a 500 µs lease either way would
 * change what was asked. Inside the SPI a wait below 1 ms is rounded up to the backend's unit.</li>
 * <li><b>For ever</b> ({@link Long#MAX_VALUE} of any {@link TimeUnit}, the largest {@link Duration}, or anything longer
 * than {@link #FOR_EVER}): saturates to {@link #FOR_EVER}, a hundred years, which every backend stores (Redis counts
 * it in milliseconds, the JDBC tables in microseconds since the epoch in a {@code BIGINT}, etcd's lease limit is about
 * 285 years) and which leaves {@link System#nanoTime()} deadlines wrap-safe. A wait of {@code FOR_EVER} waits until
 * the lock is free; a fixed lease of {@code FOR_EVER} is kept until released.</li>
 * </ul>
 * Backends round up (a lease is never shorter than asked) with {@link #ceilMillis}, {@link #ceilMicros} and
 * {@link #ceilSeconds}; deadlines are {@link #deadline} and {@link #remaining}.
 */
public final class LockDurations {

    /** The longest duration any lock call waits, leases or holds: a hundred years (36,500 days). */
    public static final Duration FOR_EVER = Duration.ofDays(36_500);

    /** {@link #FOR_EVER} in nanoseconds, below {@code Long.MAX_VALUE / 2} so that {@code nanoTime} arithmetic wraps safely. */
    public static final long FOR_EVER_NANOS = FOR_EVER.toNanos();

    /** {@code -FOR_EVER}, made once: {@link Duration#negated()} goes through {@code BigDecimal} on every call. */
    private static final Duration MINUS_FOR_EVER = FOR_EVER.negated();

    /** One millisecond in nanoseconds: the shortest lease, and the shortest non-zero wait or hold users may write. */
    public static final long ONE_MILLI_NANOS = 1_000_000L;

    /** The shortest watchdog timeout ({@code distlock.watchdog-timeout}): renewals come every third of it. */
    public static final Duration MIN_WATCHDOG_TIMEOUT = Duration.ofMillis(100);

    /**
     * The longest watchdog timeout ({@code distlock.watchdog-timeout}), one day: it is how long the lock of a holder
     * that died lives on, and every backend's renewal, session and lease arithmetic is checked up to it (ZooKeeper's
     * session timeout is an {@code int} of milliseconds). A lock meant to outlive its holder takes a fixed lease.
     */
    public static final Duration MAX_WATCHDOG_TIMEOUT = Duration.ofDays(1);

    private LockDurations() {
    }

    /**
     * {@code amount} of {@code unit} in nanoseconds, saturating at {@link #FOR_EVER_NANOS}; negative amounts saturate
     * at {@code -FOR_EVER_NANOS}.
     */
    public static long toNanos(long amount, TimeUnit unit) {
        if (unit == null) {
            throw new IllegalArgumentException("unit must not be null");
        }
        return clampNanos(unit.toNanos(amount));
    }

    /**
     * {@code duration} in nanoseconds, saturating at {@link #FOR_EVER_NANOS} (never the {@link ArithmeticException} of
     * {@link Duration#toNanos()}); negative durations saturate at {@code -FOR_EVER_NANOS}.
     */
    public static long toNanos(Duration duration) {
        if (duration == null) {
            throw new IllegalArgumentException("duration must not be null");
        }
        if (duration.compareTo(FOR_EVER) >= 0) {
            return FOR_EVER_NANOS;
        }
        if (duration.compareTo(MINUS_FOR_EVER) <= 0) {
            return -FOR_EVER_NANOS;
        }
        return duration.toNanos();
    }

    /** {@code amount} of {@code unit} as a {@link Duration}, at most {@link #FOR_EVER} (never an overflow). */
    public static Duration toDuration(long amount, TimeUnit unit) {
        return Duration.ofNanos(toNanos(amount, unit));
    }

    /** {@code duration}, at most {@link #FOR_EVER}; {@code null} stays {@code null}. */
    public static @Nullable Duration capped(@Nullable Duration duration) {
        return (duration == null || duration.compareTo(FOR_EVER) <= 0) ? duration : FOR_EVER;
    }

    /** Whether {@code duration} is more than zero but less than one millisecond. */
    public static boolean belowOneMilli(Duration duration) {
        return !duration.isNegative() && !duration.isZero() && duration.compareTo(Duration.ofNanos(ONE_MILLI_NANOS)) < 0;
    }

    /**
     * {@code duration} capped at {@link #FOR_EVER}, after checking that it is 0 or at least one millisecond.
     *
     * @param what the method, attribute or property the value came from, named in the error
     * @param duration the value; {@code null} stays {@code null}
     * @param zeroMeans what 0 means there, named in the error (for example {@code "0 (watchdog)"})
     * @throws IllegalArgumentException naming {@code what} when {@code duration} is negative or below 1 ms
     */
    public static @Nullable Duration checked(String what, @Nullable Duration duration, String zeroMeans) {
        if (duration == null) {
            return null;
        }
        if (duration.isNegative() || belowOneMilli(duration)) {
            throw new IllegalArgumentException(what + " must be " + zeroMeans + " or at least 1 ms, was " + duration);
        }
        return capped(duration);
    }

    /**
     * Like {@link #checked}, and also refuses 0: for intervals and timeouts that must be positive.
     *
     * @throws IllegalArgumentException naming {@code what} when {@code duration} is null, 0, negative or below 1 ms
     */
    public static Duration checkedPositive(String what, Duration duration) {
        if (duration == null || duration.isNegative() || duration.isZero() || belowOneMilli(duration)) {
            throw new IllegalArgumentException(what + " must be at least 1 ms, was " + duration);
        }
        return capped(duration);
    }

    /**
     * {@code duration} after checking that it lies within {@code [min, max]}: for timeouts and intervals, checked at
     * startup.
     *
     * @param what the property (or method) the value came from, named in the error
     * @throws IllegalArgumentException naming {@code what} when {@code duration} is null or outside the range
     */
    public static Duration checkedBetween(String what, Duration duration, Duration min, Duration max) {
        if (duration == null || duration.compareTo(min) < 0 || duration.compareTo(max) > 0) {
            throw new IllegalArgumentException(what + " must be between " + min + " and " + max + ", was " + duration);
        }
        return duration;
    }

    /** {@code nanos} rounded up to whole milliseconds; never overflows (at most {@code FOR_EVER} in ms). */
    public static long ceilMillis(long nanos) {
        return ceil(clampNanos(nanos), 1_000_000L);
    }

    /** {@code nanos} rounded up to whole microseconds; never overflows (at most {@code FOR_EVER} in µs). */
    public static long ceilMicros(long nanos) {
        return ceil(clampNanos(nanos), 1_000L);
    }

    /** {@code nanos} rounded up to whole seconds; never overflows. */
    public static long ceilSeconds(long nanos) {
        return ceil(clampNanos(nanos), 1_000_000_000L);
    }

    /**
     * The {@link System#nanoTime()} deadline {@code nanos} after {@code now}, with {@code nanos} capped at
     * {@link #FOR_EVER_NANOS}: compare it only by difference ({@code deadline - System.nanoTime() > 0}), as
     * {@code nanoTime} values must be. Never turns a long wait into one already over.
     */
    public static long deadline(long now, long nanos) {
        // wraps on purpose: nanoTime's origin is arbitrary, and a difference below Long.MAX_VALUE / 2 compares right
        return now + Math.max(0, clampNanos(nanos));
    }

    /** The nanoseconds from {@code now} to {@code deadline} (both {@link System#nanoTime()} values), never negative. */
    public static long remaining(long deadline, long now) {
        return Math.max(0, deadline - now);
    }

    /** {@code a + b} saturating at {@link Long#MAX_VALUE} and {@link Long#MIN_VALUE} instead of wrapping. */
    public static long saturatedAdd(long a, long b) {
        long sum = a + b;
        // overflow only when both operands share a sign that the sum does not
        if (((a ^ sum) & (b ^ sum)) < 0) {
            return (a < 0) ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
        return sum;
    }

    /** {@code a * b} for non-negative operands, saturating at {@link Long#MAX_VALUE}. */
    public static long saturatedMultiply(long a, long b) {
        long high = Math.multiplyHigh(a, b);
        long low = a * b;
        if ((high == 0 && low >= 0) || (high == -1 && low < 0)) {
            return low;
        }
        return ((a ^ b) < 0) ? Long.MIN_VALUE : Long.MAX_VALUE;
    }

    private static long clampNanos(long nanos) {
        return Math.max(-FOR_EVER_NANOS, Math.min(FOR_EVER_NANOS, nanos));
    }

    private static long ceil(long value, long unit) {
        // floorDiv rounds towards minus infinity, so negated twice it is the ceiling, for negatives too
        return -Math.floorDiv(-value, unit);
    }
}

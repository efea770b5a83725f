package io.github.distlock;

import java.time.Duration;

import io.github.distlock.spi.LockDurations;
import org.jspecify.annotations.Nullable;

/**
 * How one lock call waits, leases and holds.
 *
 * @param waitTime how long to wait for the lock: {@link Duration#ZERO} tries once; {@code null} uses
 * {@code distlock.wait-time}
 * @param leaseTime a fixed lease after which the lock expires even if the code still runs; {@link #WATCHDOG} renews the
 * lock while the holder lives; {@code null} uses {@code distlock.lease-time} (the watchdog when that is not set)
 * @param fenced whether to take a fenced lock whose token {@link LockContext#fencingToken()} returns
 * @param type the kind of lock; {@code null} means {@link LockType#REENTRANT}
 * @param holdAtLeast the lock stays taken at least this long after it was acquired, even when the code finishes
 * sooner (released in the background, without delaying the caller): a job scheduled on several instances whose
 * clocks or triggers differ a little then runs once; {@code null} or zero for none
 * @param name what the call is called in metrics, traces and the actuator endpoint: a low-cardinality name such as
 * {@code "nightly-report"}, never the key itself (keys are unbounded and may carry personal data); {@code null} for
 * {@value #UNNAMED}. {@link DistributedLock} methods are named after their class and method.
 * @param permits how many callers may hold the key at once: {@code 1} (the default) is a lock; more is a semaphore
 * ("at most 3 report exports per tenant"), {@link LockType#REENTRANT} and unfenced only
 * @param leaseLostPolicy what the call does to its running code when its lock is reported lost: see
 * {@link LeaseLostPolicy}; {@code null} means {@link LeaseLostPolicy#REPORT}
 */
public record LockOptions(@Nullable Duration waitTime, @Nullable Duration leaseTime, boolean fenced, LockType type,
        @Nullable Duration holdAtLeast, String name, int permits, LeaseLostPolicy leaseLostPolicy) {

    /** The {@link #name()} of a template call that names none. */
    public static final String UNNAMED = "template";

    /** The lease value meaning "renewed by the watchdog while held". */
    public static final Duration WATCHDOG = Duration.ZERO;

    /** The configured defaults for wait and lease, not fenced, {@link LockType#REENTRANT}, no minimum hold. */
    public static final LockOptions DEFAULTS = new LockOptions(null, null, false);

    /**
     * Rejects negative times and times between zero and one millisecond: backends count in whole milliseconds, and a
     * lease of 500 µs would reach Redis as "expire now", a lock that is gone before the code runs. Times longer than
     * {@link LockDurations#FOR_EVER} (a hundred years; {@code Long.MAX_VALUE} of any unit, the largest
     * {@code Duration}) are stored as {@code FOR_EVER}: a wait that lasts until the lock is free, a lease kept until
     * released.
     *
     * <p>{@code type} and {@code name} may be {@code null} here (a record's components carry one nullness for the
     * constructor and the accessor): they become {@link LockType#REENTRANT} and {@value #UNNAMED}, so their accessors
     * never return {@code null}.
     */
    public LockOptions {
        waitTime = LockDurations.checked("LockOptions.waitTime", waitTime, "0");
        leaseTime = LockDurations.checked("LockOptions.leaseTime", leaseTime, "0 (LockOptions.WATCHDOG)");
        holdAtLeast = LockDurations.checked("LockOptions.holdAtLeast", holdAtLeast, "0");
        if (holdAtLeast != null && leaseTime != null && !leaseTime.isZero() && holdAtLeast.compareTo(leaseTime) > 0) {
            // the fixed lease would end first: another caller could run inside the hold that was meant to keep it out
            throw new IllegalArgumentException("holdAtLeast (" + holdAtLeast + ") must not exceed the fixed leaseTime ("
                    + leaseTime + ")");
        }
        if (name != null && name.isBlank()) {
            throw new IllegalArgumentException("name must not be blank; leave it null for '" + UNNAMED + "'");
        }
        type = (type != null) ? type : LockType.REENTRANT;
        if (permits < 1) {
            throw new IllegalArgumentException("permits must be at least 1, was " + permits);
        }
        if (permits > 1 && (type != LockType.REENTRANT || fenced)) {
            // N holders at once have no single order for tokens, and a FAIR/READ/WRITE semaphore is not offered
            throw new IllegalArgumentException("permits = " + permits + " (a semaphore) cannot be combined with "
                    + (fenced ? "fenced = true" : "type = " + type) + ": permits are REENTRANT and unfenced only");
        }
        holdAtLeast = (holdAtLeast != null && !holdAtLeast.isZero()) ? holdAtLeast : null;
        name = (name != null) ? name : UNNAMED;
        leaseLostPolicy = (leaseLostPolicy != null) ? leaseLostPolicy : LeaseLostPolicy.REPORT;
    }

    /** Wait, lease, fencing, type, minimum hold, name and permits; the loss of the lock is only reported. */
    public LockOptions(@Nullable Duration waitTime, @Nullable Duration leaseTime, boolean fenced,
            @Nullable LockType type, @Nullable Duration holdAtLeast, @Nullable String name, int permits) {
        this(waitTime, leaseTime, fenced, type, holdAtLeast, name, permits, LeaseLostPolicy.REPORT);
    }

    /** Wait, lease, fencing, type, minimum hold and name; one permit (a lock). */
    public LockOptions(@Nullable Duration waitTime, @Nullable Duration leaseTime, boolean fenced,
            @Nullable LockType type, @Nullable Duration holdAtLeast, @Nullable String name) {
        this(waitTime, leaseTime, fenced, type, holdAtLeast, name, 1);
    }

    /** Wait, lease, fencing, type and minimum hold; {@linkplain #UNNAMED unnamed}. */
    public LockOptions(@Nullable Duration waitTime, @Nullable Duration leaseTime, boolean fenced,
            @Nullable LockType type, @Nullable Duration holdAtLeast) {
        this(waitTime, leaseTime, fenced, type, holdAtLeast, null);
    }

    /** Wait, lease and fencing; a {@link LockType#REENTRANT} lock with no minimum hold. */
    public LockOptions(@Nullable Duration waitTime, @Nullable Duration leaseTime, boolean fenced) {
        this(waitTime, leaseTime, fenced, LockType.REENTRANT, null);
    }

    /** Options with the given wait and the configured lease. */
    public static LockOptions waitFor(@Nullable Duration waitTime) {
        return new LockOptions(waitTime, null, false);
    }

    /** These options with another wait time. */
    public LockOptions withWaitTime(@Nullable Duration waitTime) {
        return new LockOptions(waitTime, leaseTime, fenced, type, holdAtLeast, name, permits, leaseLostPolicy);
    }

    /** These options with another lease time ({@link #WATCHDOG} for renewal). */
    public LockOptions withLeaseTime(@Nullable Duration leaseTime) {
        return new LockOptions(waitTime, leaseTime, fenced, type, holdAtLeast, name, permits, leaseLostPolicy);
    }

    /** These options, fenced. */
    public LockOptions withFencing() {
        return new LockOptions(waitTime, leaseTime, true, type, holdAtLeast, name, permits, leaseLostPolicy);
    }

    /** These options with another lock type. */
    public LockOptions withType(@Nullable LockType type) {
        return new LockOptions(waitTime, leaseTime, fenced, type, holdAtLeast, name, permits, leaseLostPolicy);
    }

    /** These options with another {@link #name()}. */
    public LockOptions withName(@Nullable String name) {
        return new LockOptions(waitTime, leaseTime, fenced, type, holdAtLeast, name, permits, leaseLostPolicy);
    }

    /**
     * These options with {@code permits} holders allowed at once: see {@link #permits()}. On Redis a key with permits is
     * a semaphore of its own ({@code distlock_permits:{<key>}}), apart from the lock of the same key.
     */
    public LockOptions withPermits(int permits) {
        return new LockOptions(waitTime, leaseTime, fenced, type, holdAtLeast, name, permits, leaseLostPolicy);
    }

    /** These options with a minimum hold: see {@link #holdAtLeast()}. */
    public LockOptions withHoldAtLeast(@Nullable Duration holdAtLeast) {
        return new LockOptions(waitTime, leaseTime, fenced, type, holdAtLeast, name, permits, leaseLostPolicy);
    }

    /**
     * These options with another {@link #leaseLostPolicy()}: {@link LeaseLostPolicy#INTERRUPT} or
     * {@link LeaseLostPolicy#CANCEL} stop the call's code when its lock is reported lost.
     */
    public LockOptions withLeaseLostPolicy(@Nullable LeaseLostPolicy leaseLostPolicy) {
        return new LockOptions(waitTime, leaseTime, fenced, type, holdAtLeast, name, permits, leaseLostPolicy);
    }
}

package io.github.distlock;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.concurrent.TimeUnit;

/**
 * Runs the annotated method only while this process holds the distributed lock named by {@link #key()}.
 *
 * <pre>{@code
 * @DistributedLock(key = "'order:' + #userId", waitTime = 0)
 * public Order placeOrder(long userId, OrderRequest request) { ... }
 * }</pre>
 *
 * <p>The lock is taken before the method runs and released when it returns or throws, by its owner only. When it can't
 * be had within the wait time the method does not run and a {@link LockAcquisitionException} is thrown. A nested
 * call on the same key in the same thread re-enters the lock.
 *
 * <p>The method must be public or protected, not final, not static, and be called through the Spring proxy (a call
 * from inside the same bean bypasses the proxy and so the lock). Methods the proxy cannot intercept fail the startup.
 *
 * @see LockTemplate
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Inherited
@Documented
public @interface DistributedLock {

    /** The value of {@link #waitTime()} and {@link #leaseTime()} that means "not set: use the configured default". */
    long DEFAULT = -1;

    /** The value of {@link #leaseTime()} that means "no fixed lease: the watchdog renews the lock while held". */
    long WATCHDOG = 0;

    /**
     * The lock's key, a SpEL expression evaluated against the call: parameters by name ({@code #userId}) or position
     * ({@code #p0}, {@code #a0}), their properties ({@code #order.userId}), beans ({@code @tenant.id()}), and
     * {@code ${...}} property placeholders (resolved once, at startup). {@code #root.method}, {@code #root.target} and
     * {@code #root.args} are available too. The Redis key is {@code distlock.key-prefix} followed by the result.
     *
     * <p>A {@code +} chain such as {@code 'order:' + #userId + ':' + #productId} is evaluated part by part: each part
     * must be neither {@code null} nor blank, or the call fails before any lock is taken. The parts are joined as
     * text; put arithmetic in parentheses: {@code 'slot:' + (#a + #b)}.
     */
    String key();

    /**
     * How long to wait for the lock, in {@link #timeUnit()}: {@code 0} tries once and fails at once, a positive value
     * waits up to that long. {@link #DEFAULT} (the default) uses {@code distlock.wait-time}.
     */
    long waitTime() default DEFAULT;

    /**
     * How long the lock is held at most, in {@link #timeUnit()}. A positive value is a fixed lease with no renewal:
     * the lock expires after it even if the method still runs. {@link #WATCHDOG} ({@code 0}) renews the lock while the
     * holder lives and releases it within {@code distlock.watchdog-timeout} when it dies. {@link #DEFAULT} (the default)
     * uses {@code distlock.lease-time}, or the watchdog when that is not set.
     */
    long leaseTime() default DEFAULT;

    /** The unit of {@link #waitTime()} and {@link #leaseTime()}; milliseconds by default, as in {@code @Scheduled}. */
    TimeUnit timeUnit() default TimeUnit.MILLISECONDS;

    /**
     * Take a fenced lock: each acquisition gets a token that grows with every acquisition of the key, readable in the
     * method through {@link LockContext#fencingToken()}. Storage that remembers the highest token it has seen can then
     * refuse a write from a holder whose lease ran out while it was paused. Off by default: a fenced lock costs one
     * more round trip and keeps a counter key per lock key in Redis (expiring when unused, seeded from Redis's clock so
     * that tokens keep rising even after Redis loses its data).
     */
    boolean fenced() default false;
}

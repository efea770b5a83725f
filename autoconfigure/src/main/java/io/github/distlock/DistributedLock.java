package io.github.distlock;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.concurrent.TimeUnit;

/**
 * Runs the annotated method only while this process holds the distributed lock named by {@link #key()} (or the locks
 * of all its keys, when the key expression evaluates to a collection or an array).
 *
 * <pre>{@code
 * @DistributedLock(key = "'order:' + #userId", waitTime = 0)
 * public Order placeOrder(long userId, OrderRequest request) { ... }
 * }</pre>
 *
 * <p>The lock is taken before the method runs and released when it returns or throws, by its owner only; for a method
 * returning a {@code CompletionStage}/{@code CompletableFuture}, when the returned stage completes; for a
 * {@code Mono}/{@code Flux}, when the publisher terminates or is cancelled (taken on subscription, without blocking).
 * When it can't be had within the wait time the method does not run and a {@link LockAcquisitionException} is thrown
 * (or returned in the stage or publisher), unless {@link #skipIfLocked()} or {@link #fallbackMethod()} says otherwise.
 * A nested synchronous call on the same key in the same thread re-enters the lock; asynchronous calls never do.
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
     * text; put arithmetic in parentheses: {@code 'slot:' + (#a + #b)}. A part that is an array or a collection is
     * written as its elements ({@code [a, b]}); a part whose text would be an object's identity
     * ({@code Cart@5ecddf8f}: a new lock on every call) fails the startup when its type says so, else the call.
     *
     * <p>An expression that evaluates to a collection or an array as a whole, such as {@code #transfer.accountIds()},
     * {@code #root.args} or the inline list {@code {'acct:' + #from, 'acct:' + #to}}, locks every element, all or none,
     * in one global order (see {@link LockTemplate#execute(java.util.Collection, LockOptions, LockCallback)}).
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

    /**
     * {@link #waitTime()} as a duration string, Spring Boot style: {@code "2s"}, {@code "500ms"}, {@code "PT2S"}, or a
     * {@code ${...}} placeholder resolved at startup; a bare number is in {@link #timeUnit()}. Set this or
     * {@code waitTime}, not both (startup error).
     */
    String waitTimeString() default "";

    /** {@link #leaseTime()} as a duration string, as {@link #waitTimeString()}; {@code "0"} for the watchdog. */
    String leaseTimeString() default "";

    /** {@link #holdAtLeast()} as a duration string, as {@link #waitTimeString()}. */
    String holdAtLeastString() default "";

    /**
     * The unit of {@link #waitTime()}, {@link #leaseTime()} and {@link #holdAtLeast()} (and of bare numbers in the
     * string forms); milliseconds by default, as in {@code @Scheduled}.
     */
    TimeUnit timeUnit() default TimeUnit.MILLISECONDS;

    /**
     * Take a fenced lock: each acquisition gets a token that grows with every acquisition of the key, readable in the
     * method through {@link LockContext#fencingToken()}. Storage that remembers the highest token it has seen can then
     * refuse a write from a holder whose lease ran out while it was paused. Off by default: a fenced lock costs one
     * more round trip and keeps a counter key per lock key in Redis (expiring when unused, seeded from Redis's clock so
     * that tokens keep rising even after Redis loses its data).
     */
    boolean fenced() default false;

    /**
     * The kind of lock: {@link LockType#REENTRANT} (the default), {@link LockType#FAIR} (waiters served in arrival
     * order), {@link LockType#READ} or {@link LockType#WRITE} (many readers or one writer). A type the backend cannot
     * take (or fence) fails the startup, naming the method.
     */
    LockType type() default LockType.REENTRANT;

    /**
     * When the lock can't be had within the wait, do not run the method and return "nothing" instead of throwing
     * {@link LockAcquisitionException}: {@code null} (or nothing, for {@code void}), {@code Optional.empty()}, a
     * completed {@code CompletableFuture} of {@code null}, {@code Mono.empty()} or {@code Flux.empty()}. Logged at
     * DEBUG. What a job scheduled on every instance wants. A backend failure ({@link LockBackendException}) is never
     * skipped. Methods returning a primitive other than {@code void} can't be skipped (startup error).
     */
    boolean skipIfLocked() default false;

    /**
     * The name of a method of the same bean to run instead when the lock can't be had within the wait: same
     * parameters, optionally followed by one more of type {@link LockAcquisitionException}, and a return type
     * assignable to this method's. Missing or mismatched, it fails the startup naming both methods. A backend failure
     * ({@link LockBackendException}) never runs the fallback.
     */
    String fallbackMethod() default "";

    /**
     * The lock stays taken at least this long (in {@link #timeUnit()}) after it was acquired, even when the method
     * finishes sooner; the release then happens in the background, without delaying the caller. For jobs scheduled on
     * several instances: a run that takes 20 ms on one instance keeps another whose clock or trigger is 50 ms late
     * from running it again. {@code 0} (the default): released when the method returns.
     */
    long holdAtLeast() default 0;

    /**
     * How many callers may hold the key at once. {@code 1} (the default): a lock. More: a semaphore — at most that many
     * holders of the key at once across all instances, each with its own wait, lease (a dead holder's permit expires
     * within it, or within {@code distlock.watchdog-timeout} for the watchdog) and the same skip/fallback behaviour as a
     * lock; e.g. "at most 3 report exports per tenant". {@link LockType#REENTRANT} and unfenced only (startup error
     * otherwise), and only on a backend that supports permits (Redis). On Redis the semaphore is a key of its own,
     * {@code distlock_permits:{<key>}}: a lock and a semaphore of the same key do not exclude each other, and a
     * nested call on this thread re-enters only with the same number of permits.
     */
    int permits() default 1;

    /**
     * What this lock is called in metrics, traces ({@code distlock.lock}) and the actuator endpoint: a name with few
     * distinct values, never anything taken from the arguments. Empty (the default): the bean's class and the method,
     * such as {@code OrderService.placeOrder}.
     */
    String name() default "";

    /**
     * What to do to the running method when its lock is reported lost while it runs (see {@link LeaseLostPolicy}):
     * {@code REPORT} (the default) only reports it; {@code INTERRUPT} interrupts the method's thread (methods returning
     * a plain value only); {@code CANCEL} cancels the {@code CompletableFuture} or disposes the {@code Mono}/{@code Flux}
     * subscription, and interrupts a method returning a plain value. {@code INTERRUPT} on an asynchronous method, and
     * {@code CANCEL} on one declared to return {@code CompletionStage} (which need not be cancellable), fail the
     * startup naming the method. A stopped method that ends with an exception fails with
     * {@link LockLeaseLostException}.
     */
    LeaseLostPolicy onLeaseLost() default LeaseLostPolicy.REPORT;
}

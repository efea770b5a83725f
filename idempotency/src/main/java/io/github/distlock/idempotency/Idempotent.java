package io.github.distlock.idempotency;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the annotated method at most once per idempotency key while the key's "done" mark lives; a duplicate call gets
 * the first call's result without running the method.
 *
 * <pre>{@code
 * @Idempotent(key = "'payment-callback:' + #callback.id", ttl = "24h")
 * public Receipt settle(PaymentCallback callback) { ... }
 * }</pre>
 *
 * <p>A lock stops two copies of a call that overlap in time; this also stops the copy that arrives after the first
 * finished (a client retrying after a timeout, a webhook delivered twice). The first call runs under the key's lock;
 * on success a mark carrying its result (as JSON, through the application's Jackson mapper) is stored for
 * {@link #ttl()}. A duplicate:
 * <ul>
 * <li>while the first call runs: waits for it ({@link WhileRunning#WAIT}, up to {@link #waitTime()}) or is refused
 * ({@link WhileRunning#REFUSE}) with {@link RequestInProgressException};
 * <li>after it succeeded: gets its result, read back as the method's generic return type; {@code void} gets nothing;
 * a result that does not survive the JSON round trip gives {@link DuplicateRequestException} instead;
 * <li>after it failed: runs, unless the failure's type is in {@link #storeFailureFor()}
 * ({@link DuplicateRequestException} naming the failure).
 * </ul>
 * Inside the caller's transaction, "succeeded" means "committed": the mark is written when that transaction commits,
 * and not at all when it rolls back, so the redelivery runs; a duplicate before the commit waits for it.
 * A method whose own {@code @Transactional} suspends the caller's ({@code REQUIRES_NEW}) is marked when it returns.
 * See {@link IdempotencyTemplate} for the states and what a lost mark means (a unique constraint in the database
 * still belongs under work that must never happen twice).
 *
 * <p>The method must be public or protected, not final, not static, called through the Spring proxy, and return a
 * value (not a {@code CompletableFuture}, {@code Mono} or {@code Flux}, nor work still to be run: a {@code Callable},
 * {@code Runnable}, {@code Supplier}, {@code WebAsyncTask} or {@code DeferredResult}). Mistakes fail the startup,
 * naming the method.
 * The advice runs outside the method's {@code @Transactional} and {@code @DistributedLock}: the mark is written after
 * the transaction committed, and a replayed duplicate takes none of the method's own locks.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Inherited
@Documented
public @interface Idempotent {

    /**
     * The idempotency key, a SpEL expression evaluated as {@code @DistributedLock}'s key is (parameters by name or
     * {@code #p0}, beans, {@code ${...}} placeholders; each part of a {@code +} chain must be neither null nor blank).
     * It must name one key, not a collection. The mark's store key is {@code distlock.key-prefix}
     * + {@code "idempotent-mark:"} + the key; the lock's is {@code distlock.key-prefix} + {@code "idempotent:"} + the
     * key.
     */
    String key();

    /**
     * How long the mark lives after a call finished, as a duration ({@code "24h"}, {@code "10m"}, {@code "PT1H"}, a
     * {@code ${...}} placeholder; a bare number is seconds). Empty: {@code distlock.idempotency.ttl} (24 hours).
     * Choose it longer than the longest time a client may retry. At least 1 ms (else the startup fails naming the
     * method); longer than a hundred years ({@code "9223372036854775807s"}) is kept as
     * {@link io.github.distlock.spi.LockDurations#FOR_EVER}, a hundred years.
     */
    String ttl() default "";

    /** What a duplicate gets while the first call is still running. */
    WhileRunning whileRunning() default WhileRunning.WAIT;

    /**
     * How long a duplicate waits for a running first call ({@link WhileRunning#WAIT} only), as a duration. Empty:
     * {@code distlock.idempotency.wait-time} (30 seconds). 0 or at least 1 ms (else the startup fails naming the
     * method); longer than a hundred years waits until the running call ends.
     */
    String waitTime() default "";

    /**
     * Failures that are a final outcome (with their subclasses), such as a payment declined: they store a mark like a
     * success, and duplicates get {@link DuplicateRequestException} naming the failure. Any other failure stores
     * nothing, so the retry runs. Empty by default.
     */
    Class<? extends Throwable>[] storeFailureFor() default {};

    /**
     * What identifies the request behind the key, a SpEL expression over the parameters (often the request body,
     * {@code #request}), or empty for none. Its value, never its {@code toString()}, is fingerprinted: the SHA-256 of a
     * canonical encoding (records and other objects by their fields sorted by name, maps by their entries sorted,
     * sets by content, lists and arrays in order, numbers by value, {@code null} as a value; a {@code String} by its
     * text) is kept in the mark, and a duplicate with the same key but another fingerprint fails with
     * {@link IdempotencyKeyReusedException} (HTTP 422 in the IETF draft). A parameter whose type has no content to
     * compare (no fields, or a JDK type that is not a value) fails the startup; a value that refers to itself fails
     * the call with {@link IllegalArgumentException}.
     */
    String fingerprint() default "";

    /**
     * What the call is called in the lock's metrics and traces: low-cardinality, never the key. Empty: the bean's
     * class and the method ({@code PaymentService.settle}).
     */
    String name() default "";
}

package io.github.distlock.idempotency;

import java.time.Duration;
import java.util.List;

import io.github.distlock.spi.LockDurations;
import org.jspecify.annotations.Nullable;

/**
 * How one idempotent call keeps its mark and treats duplicates.
 *
 * @param ttl how long the "done" mark (and the stored result) lives after the call finished: a duplicate within it
 * gets the first call's outcome, one after it runs again. At least 1 ms; longer than {@link LockDurations#FOR_EVER}
 * (a hundred years: {@code Long.MAX_VALUE} of any unit, the largest {@code Duration}) is kept as {@code FOR_EVER}.
 * @param waitTime how long a duplicate waits for a first call that is still running ({@link WhileRunning#WAIT});
 * {@code null} uses {@code distlock.idempotency.wait-time}; ignored with {@link WhileRunning#REFUSE}. 0 or at least
 * 1 ms; longer than {@link LockDurations#FOR_EVER} is kept as {@code FOR_EVER}, a wait until the running call ends.
 * @param whileRunning what a duplicate gets while the first call runs; {@code null} means {@link WhileRunning#WAIT}
 * @param storeFailureFor exceptions (with their subclasses) that are a final outcome: a call failing with one stores a
 * mark as a success does, and duplicates get {@link DuplicateRequestException}; any other failure stores nothing, so
 * a retry runs. Empty by default.
 * @param fingerprint what identifies the request behind the key (its body, say), or {@code null} to check nothing: a
 * duplicate whose fingerprint differs from the stored one fails with {@link IdempotencyKeyReusedException}. Compared
 * as the SHA-256 of a canonical encoding of its content (see {@link Idempotent#fingerprint()}), never of its text.
 * @param name what the call is called in the lock's metrics and traces; {@code null} for {@value #UNNAMED}
 */
public record IdempotencyOptions(Duration ttl, @Nullable Duration waitTime, WhileRunning whileRunning,
        List<Class<? extends Throwable>> storeFailureFor, @Nullable Object fingerprint, String name) {

    /** The {@link #name()} of a call that names none. */
    public static final String UNNAMED = "idempotent";

    /**
     * Checks and caps the times. {@code whileRunning}, {@code storeFailureFor} and {@code name} may be {@code null}
     * here (a record's components carry one nullness for the constructor and the accessor): they become
     * {@link WhileRunning#WAIT}, an empty list and {@value #UNNAMED}, so their accessors never return {@code null}.
     */
    public IdempotencyOptions {
        // capped here, once, so that no store, lock or message downstream converts a duration beyond FOR_EVER
        ttl = LockDurations.checkedPositive("ttl", ttl);
        waitTime = LockDurations.checked("waitTime", waitTime, "0");
        whileRunning = (whileRunning != null) ? whileRunning : WhileRunning.WAIT;
        storeFailureFor = (storeFailureFor != null) ? List.copyOf(storeFailureFor) : List.of();
        if (name != null && name.isBlank()) {
            throw new IllegalArgumentException("name must not be blank; leave it null for '" + UNNAMED + "'");
        }
        name = (name != null) ? name : UNNAMED;
    }

    /** A mark living {@code ttl}; duplicates wait for a running call ({@code distlock.idempotency.wait-time}). */
    public static IdempotencyOptions ttl(Duration ttl) {
        return new IdempotencyOptions(ttl, null, WhileRunning.WAIT, List.of(), null, null);
    }

    /** These options with another wait for a running call. */
    public IdempotencyOptions withWaitTime(@Nullable Duration waitTime) {
        return new IdempotencyOptions(ttl, waitTime, whileRunning, storeFailureFor, fingerprint, name);
    }

    /** These options with another policy for duplicates of a running call. */
    public IdempotencyOptions withWhileRunning(@Nullable WhileRunning whileRunning) {
        return new IdempotencyOptions(ttl, waitTime, whileRunning, storeFailureFor, fingerprint, name);
    }

    /** These options storing a mark also for failures of these types. */
    @SafeVarargs
    public final IdempotencyOptions withStoreFailureFor(Class<? extends Throwable>... types) {
        return new IdempotencyOptions(ttl, waitTime, whileRunning, List.of(types), fingerprint, name);
    }

    /** These options with a request fingerprint. */
    public IdempotencyOptions withFingerprint(@Nullable Object fingerprint) {
        return new IdempotencyOptions(ttl, waitTime, whileRunning, storeFailureFor, fingerprint, name);
    }

    /** These options with another {@link #name()}. */
    public IdempotencyOptions withName(@Nullable String name) {
        return new IdempotencyOptions(ttl, waitTime, whileRunning, storeFailureFor, fingerprint, name);
    }

    /** Whether a failure with {@code failure} stores a mark. */
    boolean stores(Throwable failure) {
        for (Class<? extends Throwable> type : storeFailureFor) {
            if (type.isInstance(failure)) {
                return true;
            }
        }
        return false;
    }
}

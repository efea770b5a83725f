package io.github.distlock.idempotency;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

/**
 * Where {@link IdempotencyTemplate} keeps its "done" marks: a key/value store whose values expire. The Redis one
 * ({@link RedissonIdempotencyStore}) is configured when a {@code RedissonClient} bean exists; declare a bean of this
 * type to keep the marks elsewhere (the application's database, say).
 *
 * <p>A mark is one opaque string written once per successful call, by the holder of the call's lock, and read by its
 * duplicates. Each method is one atomic operation of the store: a reader must see either the whole mark or none, and
 * a mark must never outlive its time to live. An implementation that loses marks (eviction, a failover that drops
 * recent writes) lets a duplicate run again.
 *
 * <p>Every {@code ttl} the template passes is at least 1 ms and at most
 * {@link io.github.distlock.spi.LockDurations#FOR_EVER} (a hundred years): a store counting in milliseconds or
 * microseconds since the epoch can take it without overflowing.
 */
public interface IdempotencyStore {

    /** The mark stored under {@code key}, or {@code null} when there is none (never written, expired or deleted). */
    @Nullable String get(String key);

    /** Stores {@code mark} under {@code key}, replacing any, to expire {@code ttl} from now. */
    void put(String key, String mark, Duration ttl);

    /**
     * Stores {@code mark} under {@code key} only if no mark is there, to expire {@code ttl} from now; returns whether it
     * did. What a finished call writes: a caller that lost its lock mid-call (a pause past its lease) and finishes after
     * the call that ran behind it must not replace that call's mark, or every later duplicate would get an answer the
     * second caller never saw. The default is not atomic (a get, then a put); stores override it with their own
     * "set if absent".
     */
    default boolean putIfAbsent(String key, String mark, Duration ttl) {
        if (get(key) != null) {
            return false;
        }
        put(key, mark, ttl);
        return true;
    }

    /** Deletes the mark under {@code key}; returns whether there was one. */
    boolean delete(String key);

    /**
     * Whether this store's writes join the Spring transaction active on the calling thread (a table in the database
     * that transaction writes to, through its {@code DataSource}): a mark written inside it commits or rolls back
     * with the code's work, so {@link IdempotencyTemplate} writes it at once, inside the caller's transaction. When
     * {@code false} (Redis, the default) the template holds the mark until that transaction has committed and writes
     * it then, and drops it on rollback; a store in the transaction's database that says {@code false} must write in
     * a transaction of its own, since by then the caller's has ended. With {@code true}: a stored failure
     * ({@link IdempotencyOptions#storeFailureFor()}) is kept only if the caller's transaction commits, and code whose
     * work commits in a transaction of its own ({@code REQUIRES_NEW}) is refused inside another transaction, since its
     * mark would roll back while its work stays.
     */
    default boolean joinsTransactions() {
        return false;
    }
}

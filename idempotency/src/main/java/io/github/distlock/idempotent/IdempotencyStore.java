package io.github.distlock.idempotent;

import java.time.Duration;

/**
 * Where {@link IdempotencyTemplate} keeps its "done" marks: a key/value store whose values expire. The Redis one
 * ({@link RedissonIdempotencyStore}) is configured when a {@code RedissonClient} bean exists; declare a bean of this
 * type to keep the marks elsewhere (the application's database, say).
 *
 * <p>A mark is one opaque string written once per successful call, by the holder of the call's lock, and read by its
 * duplicates. Each method is one atomic operation of the store: a reader must see either the whole mark or none, and
 * a mark must never outlive its time to live. An implementation that loses marks (eviction, a failover that drops
 * recent writes) lets a duplicate run again.
 */
public interface IdempotencyStore {

    /** The mark stored under {@code key}, or {@code null} when there is none (never written, expired or deleted). */
    String get(String key);

    /** Stores {@code mark} under {@code key}, replacing any, to expire {@code ttl} from now. */
    void put(String key, String mark, Duration ttl);

    /** Deletes the mark under {@code key}; returns whether there was one. */
    boolean delete(String key);
}

package io.github.distlock.idempotency;

import java.time.Duration;

import io.github.distlock.spi.LockDurations;
import org.jspecify.annotations.Nullable;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/**
 * Marks as Redis strings with a time to live ({@code SET key mark PX ttl}, {@code GET}), one key per mark: the mark
 * and the result it carries expire together, and a reader sees the whole value or nothing.
 */
public final class RedissonIdempotencyStore implements IdempotencyStore {

    private final RedissonClient redisson;

    public RedissonIdempotencyStore(RedissonClient redisson) {
        this.redisson = redisson;
    }

    @Override
    public @Nullable String get(String key) {
        return redisson.<String>getBucket(key, StringCodec.INSTANCE).get();
    }

    @Override
    public void put(String key, String mark, Duration ttl) {
        redisson.<String>getBucket(key, StringCodec.INSTANCE).set(mark, px(ttl));
    }

    /** {@code SET key mark PX ttl NX}. */
    @Override
    public boolean putIfAbsent(String key, String mark, Duration ttl) {
        return redisson.<String>getBucket(key, StringCodec.INSTANCE).setIfAbsent(mark, px(ttl));
    }

    /**
     * {@code ttl} as Redis will count it: whole milliseconds, rounded up (a mark never lives shorter than asked) and at
     * most {@link LockDurations#FOR_EVER}. Redisson takes {@code ttl.toMillis()}, which throws for a {@code Duration}
     * beyond {@code Long.MAX_VALUE} ms; that would come after the code ran, and leave no mark.
     */
    private static Duration px(Duration ttl) {
        return Duration.ofMillis(LockDurations.ceilMillis(LockDurations.toNanos(ttl)));
    }

    @Override
    public boolean delete(String key) {
        return redisson.getBucket(key, StringCodec.INSTANCE).delete();
    }
}

package io.github.distlock.redisson;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.redisson.RedissonObject;
import org.redisson.api.RLock;
import org.redisson.api.RScript;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.LongCodec;

/**
 * Fencing tokens from a counter beside the lock ({@code redisson_lock_token:{key}}), issued by a script that first
 * checks that the lock is still this owner's, so tokens follow the order in which holders held the lock.
 */
final class FencingTokens {

    /** How long an unused fencing counter is kept; see {@link #ISSUE_TOKEN}. */
    private static final Duration FENCING_COUNTER_TTL = Duration.ofDays(7);

    /**
     * Issues a token if the lock (KEYS[1]) is held by the owner field ARGV[1]: the counter (KEYS[2]) plus one, but never
     * less than Redis's clock in microseconds. The clock floor is what keeps tokens rising when the counter is gone
     * (restart without persistence, expiry when unused) or behind (failover to a replica that lagged, restore of an
     * older snapshot): as long as the serving node's clock is ahead of the one that issued the last token, and no key
     * is locked more than once per microsecond, a token is higher than every token issued before. Lua numbers are
     * doubles, exact up to 2^53; microseconds since 1970 stay below that until the year 2255.
     */
    private static final String ISSUE_TOKEN = """
            if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
              return -1
            end
            redis.replicate_commands()
            local now = redis.call('time')
            local token = tonumber(now[1]) * 1000000 + tonumber(now[2])
            local current = tonumber(redis.call('get', KEYS[2]) or '0')
            if current ~= nil and current >= token then
              token = current + 1
            end
            redis.call('set', KEYS[2], string.format('%.0f', token), 'px', ARGV[2])
            return token
            """;

    private final RedissonClient redisson;

    FencingTokens(RedissonClient redisson) {
        this.redisson = redisson;
    }

    /** The next token of {@code lock} for {@code ownerField}; {@code -1} when that owner no longer holds it. */
    CompletableFuture<Long> issue(RLock lock, String ownerField) {
        String counter = RedissonObject.prefixName("redisson_lock_token", lock.getName());
        return redisson.getScript(LongCodec.INSTANCE).<Long>evalAsync(lock.getName(), RScript.Mode.READ_WRITE, ISSUE_TOKEN,
                RScript.ReturnType.LONG, List.<Object>of(lock.getName(), counter), ownerField,
                FENCING_COUNTER_TTL.toMillis()).toCompletableFuture();
    }
}

package io.github.distlock.redisson;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockKeyClosedException;
import io.github.distlock.spi.LockDurations;
import org.redisson.api.RScript;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/**
 * Permits: at most N owners of a key at once (a semaphore), in a sorted set {@code distlock_permits:{<key>}} (its own
 * namespace: no lock key can be it) whose members are {@code <N>|<owner field>} and whose scores are their expiry in
 * Redis's own clock (ms). A dead owner's permit expires with its lease; every script first drops expired members, so
 * nobody waits for a permit that is gone.
 *
 * <p>Callers that disagree on N (a rolling deploy that lowers it, two methods sharing a key) never break a holder's
 * promise: a caller is admitted only while fewer hold than the smallest N among itself and every live holder, so each
 * holder was admitted under its own N and nobody admitted later exceeds it.
 *
 * <p>Why not Redisson's {@code RPermitExpirableSemaphore}: it expires permits by the calling client's clock
 * ({@code System.currentTimeMillis()} sent to its scripts), so a client whose clock runs ahead expires the permits of
 * live holders early and more than N hold at once; here only Redis's clock counts. And its permit count lives in a key
 * that never expires; here the set expires with its last permit.
 *
 * <p>Waiters poll (5 ms doubling to 50 ms, with jitter, never past the earliest expiry or the end of the wait): permits
 * are for "at most 3 report exports per tenant", not for hot keys, and polling needs no subscription per key.
 */
final class PermitLocks {

    /**
     * KEYS[1] the set, KEYS[2] the key's closed mark ({@link HandoffLocks#closedKey}, shared with {@code FAIR}); ARGV[1]
     * member ({@code <N>|<owner field>}), [2] permits N, [3] lease ms. Returns {1} acquired, {0, ms until the earliest
     * permit expires}, or {-1, reason} while the key is closed (nothing taken, even when a permit is free).
     */
    private static final String ACQUIRE = """
            redis.replicate_commands()
            local closed = redis.call('get', KEYS[2])
            if closed then
              return {-1, closed}
            end
            local t = redis.call('time')
            local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            redis.call('zremrangebyscore', KEYS[1], '-inf', now)
            local holders = redis.call('zrange', KEYS[1], 0, -1)
            local limit = tonumber(ARGV[2])
            for _, member in ipairs(holders) do
              local n = tonumber(string.match(member, '^(%d+)|'))
              if n and n < limit then
                limit = n
              end
            end
            if #holders >= limit then
              local first = redis.call('zrange', KEYS[1], 0, 0, 'withscores')
              return {0, tonumber(first[2]) - now}
            end
            local expiry = now + tonumber(ARGV[3])
            redis.call('zadd', KEYS[1], string.format('%.0f', expiry), ARGV[1])
            local last = redis.call('zrange', KEYS[1], -1, -1, 'withscores')
            redis.call('pexpireat', KEYS[1], string.format('%.0f', tonumber(last[2]) + 1))
            return {1}
            """;

    /** KEYS[1] the set; ARGV[1] member. Returns 1 when it held a live permit, 0 otherwise. */
    private static final String RELEASE = """
            redis.replicate_commands()
            local t = redis.call('time')
            local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            local score = redis.call('zscore', KEYS[1], ARGV[1])
            redis.call('zrem', KEYS[1], ARGV[1])
            if score == false or tonumber(score) <= now then
              return 0
            end
            return 1
            """;

    /** KEYS[1] the set; ARGV[1] member, [2] lease ms ('0' only asks). Returns 1 when it holds a live permit. */
    private static final String RENEW = """
            redis.replicate_commands()
            local t = redis.call('time')
            local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            local score = redis.call('zscore', KEYS[1], ARGV[1])
            if score == false or tonumber(score) <= now then
              return 0
            end
            if ARGV[2] ~= '0' then
              local expiry = now + tonumber(ARGV[2])
              redis.call('zadd', KEYS[1], string.format('%.0f', expiry), ARGV[1])
              local last = redis.call('zrange', KEYS[1], -1, -1, 'withscores')
              redis.call('pexpireat', KEYS[1], string.format('%.0f', tonumber(last[2]) + 1))
            end
            return 1
            """;

    private final GiveBacks giveBacks;
    private final RedissonClient redisson;
    private final ScheduledExecutorService timer;
    /**
     * Acquisitions still waiting, with their key: answered by {@link #shutdown()}, since the timer that polls for them
     * stops, and by {@link #closed} at once.
     */
    private final java.util.Map<CompletableFuture<Boolean>, String> waiting = new java.util.concurrent.ConcurrentHashMap<>();

    PermitLocks(GiveBacks giveBacks, RedissonClient redisson, ScheduledExecutorService timer) {
        this.giveBacks = giveBacks;
        this.redisson = redisson;
        this.timer = timer;
    }

    /** The sorted set of the permits of {@code key}, in the key's hash slot. */
    static String permitsKey(String key) {
        return LockKeys.companion("distlock_permits", key);
    }

    /** A holder's member: the N it was admitted under, and its owner field. */
    private static String member(int permits, String field) {
        return permits + "|" + field;
    }

    /**
     * Takes one of {@code permits} permits of {@code key}, waiting up to {@code waitNanos}: completes with true (held
     * for {@code leaseMillis}), false (all taken for the whole wait), or exceptionally (Redis failed; the script may
     * have run, so the caller gives back). Cancelling the result stops the polling.
     */
    CompletableFuture<Boolean> acquire(String key, String field, int permits, long waitNanos, long leaseMillis) {
        CompletableFuture<Boolean> result = new CompletableFuture<>();
        waiting.put(result, key);
        result.whenComplete((ignored, failure) -> waiting.remove(result));
        long deadline = LockDurations.deadline(System.nanoTime(), waitNanos);
        attempt(key, member(permits, field), permits, deadline, leaseMillis, 5, result);
        return result;
    }

    /** The provider is closing: every waiting acquisition fails now rather than never. */
    void shutdown() {
        for (CompletableFuture<Boolean> result : waiting.keySet()) {
            result.completeExceptionally(new IllegalStateException("The lock provider was closed while waiting for a permit"));
        }
    }

    /**
     * {@code key} was just closed: this provider's waiters for its permits fail now rather than at their next attempt
     * (which would find the mark). A waiter whose attempt took a permit meanwhile gives it back, as one cancelled does.
     *
     * @return how many waiters were told
     */
    long closed(String key, String reason) {
        long told = 0;
        for (java.util.Map.Entry<CompletableFuture<Boolean>, String> waiter : waiting.entrySet()) {
            if (waiter.getValue().equals(key)
                    && waiter.getKey().completeExceptionally(new LockKeyClosedException(key, reason))) {
                told++;
            }
        }
        return told;
    }

    private void attempt(String key, String field, int permits, long deadline, long leaseMillis, long backoff,
            CompletableFuture<Boolean> result) {
        if (result.isDone()) {
            return;
        }
        String set = permitsKey(key);
        redisson.getScript(StringCodec.INSTANCE).<List<Object>>evalAsync(set, RScript.Mode.READ_WRITE, ACQUIRE,
                RScript.ReturnType.LIST, List.<Object>of(set, HandoffLocks.closedKey(key)), field, String.valueOf(permits), String.valueOf(leaseMillis))
                .whenComplete((reply, failure) -> {
                    if (failure != null) {
                        if (!result.completeExceptionally(failure)) {
                            // the caller is gone (cancelled) and the script may have run before its reply was lost
                            giveBacks.giveBack(key, () -> releaseMember(key, field), leaseMillis);
                        }
                        return;
                    }
                    if ("-1".equals(reply.get(0).toString())) {
                        result.completeExceptionally(new LockKeyClosedException(key, reply.get(1).toString()));
                        return;
                    }
                    if ("1".equals(reply.get(0).toString())) {
                        if (!result.complete(true)) {
                            // cancelled while the script ran: not wanted any more
                            giveBacks.giveBack(key, () -> releaseMember(key, field), leaseMillis);
                        }
                        return;
                    }
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        result.complete(false);
                        return;
                    }
                    long untilExpiry = Math.max(1, Long.parseLong(reply.get(1).toString()));
                    long delay = Math.min(Math.min(backoff + ThreadLocalRandom.current().nextLong(backoff / 2 + 1),
                            untilExpiry), TimeUnit.NANOSECONDS.toMillis(left) + 1);
                    try {
                        timer.schedule(() -> attempt(key, field, permits, deadline, leaseMillis,
                                Math.min(50, backoff * 2), result), delay, TimeUnit.MILLISECONDS);
                    }
                    catch (RuntimeException rejected) {
                        result.completeExceptionally(rejected);
                    }
                });
    }

    /** Gives back the permit of {@code field}, taken under {@code permits}: true when it held a live one. */
    CompletableFuture<Boolean> release(String key, int permits, String field) {
        return releaseMember(key, member(permits, field));
    }

    private CompletableFuture<Boolean> releaseMember(String key, String member) {
        String set = permitsKey(key);
        return redisson.getScript(StringCodec.INSTANCE).<Long>evalAsync(set, RScript.Mode.READ_WRITE, RELEASE,
                RScript.ReturnType.LONG, List.<Object>of(set), member).toCompletableFuture().thenApply(held -> held == 1L);
    }

    /** Whether {@code field} holds a live permit, extending it to {@code leaseMillis} when that is not 0. */
    CompletableFuture<Boolean> renew(String key, int permits, String field, long leaseMillis) {
        String set = permitsKey(key);
        return redisson.getScript(StringCodec.INSTANCE).<Long>evalAsync(set, RScript.Mode.READ_WRITE, RENEW,
                RScript.ReturnType.LONG, List.<Object>of(set), member(permits, field), String.valueOf(leaseMillis))
                .toCompletableFuture().thenApply(held -> held == 1L);
    }
}

package io.github.distlock.redisson;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockKeyClosedException;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.RedisServerExtension;
import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Review of 80c40f2 (a FAIR close is ordered against a waiter's queueing by the counter {@code distlock_closes:{k}}).
 * The counter is an ordinary Redis key with a time to live: a failover to a replica that had not received the INCR,
 * an eviction (volatile-* maxmemory policies pick keys with a TTL), a FLUSHALL or the day-long TTL lose it, and the
 * next close or queueing starts again from 0. A close message read after such a loss compares numbers of two
 * different counts.
 *
 * <p>Watchdog timeout {@value #WATCHDOG_MILLIS} ms: entries live 5 s (polls every 1.67 s), grants last 5 s. The close
 * message is played by hand where its delay matters, as {@code ReviewCloseAndNamesTest} does.
 */
class ReviewCloseCounterTest {

    static final long WATCHDOG_MILLIS = 15_000;

    /**
     * The close script's effect (mark, count, queue emptied), the reopen, and the loss of the counter (what a failover
     * to a replica without the INCR, an eviction or a FLUSHALL of the counter does), in one step; the close's number.
     */
    private static final String CLOSE_REOPEN_AND_LOSE_THE_COUNT = """
            redis.call('set', KEYS[3], ARGV[1])
            local number = redis.call('incr', KEYS[4])
            redis.call('del', KEYS[1], KEYS[2])
            redis.call('del', KEYS[3])
            redis.call('del', KEYS[4])
            return number
            """;

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private final List<RedissonClient> clients = new ArrayList<>();
    private final List<RedissonLockProvider> providers = new ArrayList<>();

    @BeforeEach
    void flush() {
        redis("FLUSHALL");
    }

    @AfterEach
    void stop() {
        providers.forEach(RedissonLockProvider::close);
        clients.forEach(RedissonClient::shutdown);
    }

    /**
     * A waiter named by close #1, whose close message is read late: meanwhile the key was reopened, the counter was
     * lost, and the waiter's poll queued it again, reading a count that started over. A count read below the close's
     * number is taken for "queued before the close" and skips the leave: the entry stays, and the holder's release hands the lock to
     * nobody (the grantee's waiter is gone) for a whole grant.
     */
    @Test
    void aWaiterQueuedAgainAfterTheCloseCountWasLostLeavesNoEntry() throws Exception {
        RedissonLockProvider a = provider();
        RedissonLockProvider b = provider();
        LockHandle holder = a.acquire(fair("k", Duration.ZERO)).join();
        CompletableFuture<LockHandle> waiter = b.acquire(fair("k", Duration.ofSeconds(60)));
        awaitQueued("k", 1);
        String owner = onlyOwnerQueued("k");
        long closeNumber = closeReopenAndLoseTheCount("k", "sold out");
        assertThat(closeNumber).isPositive();
        // b's next poll queues the waiter again, on an open key whose count reads 0
        awaitQueued("k", 1);
        redis("PUBLISH", "distlock:handoff:" + b.clientId(), "c|1|k" + closeNumber + "|" + owner + "|sold out");

        assertThatThrownBy(() -> waiter.get(5, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(LockKeyClosedException.class).hasMessage("Lock 'k' is closed: sold out");
        // invariant: no queue entry remains for a waiter that was answered
        await("the entry of the waiter told closed, taken out").atMost(Duration.ofSeconds(3))
                .until(() -> (Long) redis("HLEN", "distlock_waiters:{k}"), n -> n == 0);
        assertThat(holder.release()).isTrue();
        assertThat(redis("HGETALL", "k")).as("the lock, not granted to the waiter told closed").isEqualTo(List.of());
    }

    private RedissonLockProvider provider() {
        Config config = new Config();
        config.setLockWatchdogTimeout(WATCHDOG_MILLIS);
        config.useSingleServer().setAddress(redis.uri()).setTimeout(10_000).setRetryAttempts(0);
        RedissonClient client = Redisson.create(config);
        clients.add(client);
        RedissonLockProvider provider = new RedissonLockProvider(client);
        providers.add(provider);
        return provider;
    }

    private static LockRequest fair(String key, Duration wait) {
        return new LockRequest(key, wait.toNanos(), 0, false, LockType.FAIR, LockOwner.next());
    }

    private static Object redis(String... command) {
        return RespClient.callOnce(redis.port(), command);
    }

    private static void awaitQueued(String key, int count) {
        await().atMost(Duration.ofSeconds(10))
                .until(() -> (Long) redis("HLEN", "distlock_waiters:{" + key + "}") == count);
    }

    private static String onlyOwnerQueued(String key) {
        String field = ((List<?>) redis("HKEYS", "distlock_waiters:{" + key + "}")).get(0).toString();
        return field.substring(field.lastIndexOf(':') + 1);
    }

    private static long closeReopenAndLoseTheCount(String key, String reason) {
        return (Long) redis("EVAL", CLOSE_REOPEN_AND_LOSE_THE_COUNT, "4", "distlock_queue:{" + key + "}",
                "distlock_waiters:{" + key + "}", "distlock_closed:{" + key + "}", "distlock_closes:{" + key + "}",
                reason);
    }
}

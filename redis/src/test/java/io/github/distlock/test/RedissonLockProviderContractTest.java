package io.github.distlock.test;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;

import io.github.distlock.LockType;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.RedisServerExtension;
import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The Redisson provider keeps the provider contract, on a real redis-server. Two of its cases guard this provider in
 * particular: FAIR waiters that give up must leave Redisson's queue (waits must reach Redisson in the right unit), and
 * READ/WRITE locks must not share the hash of a REENTRANT lock of the same key, whose lock a reader's release could
 * delete.
 */
class RedissonLockProviderContractTest extends LockProviderContractTest {

    /** Short, so that the renewal and dead-holder tests take seconds: the suite waits for it. */
    static final Duration WATCHDOG = Duration.ofSeconds(1);

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private static RedissonClient client;

    @BeforeAll
    static void connect() {
        client = newClient(redis.uri());
    }

    @AfterAll
    static void disconnect() {
        if (client != null) {
            client.shutdown();
        }
    }

    static RedissonClient newClient(String uri) {
        Config config = new Config();
        config.setLockWatchdogTimeout(WATCHDOG.toMillis());
        config.useSingleServer().setAddress(uri)
                // a loaded 2-core machine can stall a reply for seconds; exclusion, not latency, is tested
                .setTimeout(10_000)
                .setConnectionMinimumIdleSize(2)
                .setSubscriptionConnectionMinimumIdleSize(1);
        return Redisson.create(config);
    }

    @Override
    protected LockProvider createProvider() {
        return new RedissonLockProvider(client);
    }

    @Override
    protected Duration watchdogTimeout() {
        return WATCHDOG;
    }

    /** Another process: a client of its own, shut down without a release (its watchdog stops with it). */
    @Override
    protected void acquireAndAbandon(LockRequest request) {
        RedissonClient dying = newClient(redis.uri());
        try (RedissonLockProvider other = new RedissonLockProvider(dying)) {
            LockHandle handle = other.acquire(request).join();
            assertThat(handle).as("the lock to abandon").isNotNull();
        }
        finally {
            dying.shutdown();
        }
    }

    @Override
    protected void expireBehindItsBack(String key) {
        assertThat(RespClient.callOnce(redis.port(), "DEL", key)).as("keys deleted").isEqualTo(1L);
    }

    /** A fair lock's waiters have an entry each in a Redis hash; the other types have no queue to look at. */
    @Override
    protected void awaitQueued(LockType type, String key, int count, CompletableFuture<LockHandle> latest) {
        if (type != LockType.FAIR) {
            super.awaitQueued(type, key, count, latest);
            return;
        }
        String entries = "distlock_waiters:{" + key + "}";
        await().atMost(slack()).until(() -> (Long) RespClient.callOnce(redis.port(), "HLEN", entries) >= count);
    }

    @Override
    protected boolean closesKeys() {
        return true;
    }
}

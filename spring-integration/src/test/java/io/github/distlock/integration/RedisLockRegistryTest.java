package io.github.distlock.integration;

import java.time.Duration;
import java.util.List;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LockListener;
import io.github.distlock.LockTemplate;
import io.github.distlock.redisson.RedissonLockProvider;
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
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link DistlockLockRegistryContract} on a real redis-server, and what only a real backend can show: a hold lost in
 * the backend is noticed by the owner's next re-entry, which is how a leader learns it no longer leads.
 */
class RedisLockRegistryTest extends DistlockLockRegistryContract {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private static RedissonClient redisson;

    @BeforeAll
    static void connect() {
        Config config = new Config();
        config.useSingleServer().setAddress(redis.uri());
        redisson = Redisson.create(config);
    }

    @AfterAll
    static void disconnect() {
        redisson.shutdown();
    }

    @Override
    protected LockTemplate newInstance(List<LockListener> listeners) {
        return new DefaultLockTemplate(new RedissonLockProvider(redisson), "lock:", Duration.ZERO, null, listeners);
    }

    @Test
    void aReentryAfterTheHoldWasLostInTheBackendIsRefusedWhileAnotherInstanceHoldsIt() throws Exception {
        DistlockLock lock = one.obtain(key);
        lock.lock();
        try (RespClient client = RespClient.connect(redis.port())) {
            assertThat(client.call("EXISTS", lock.fullKey())).as("the lock's Redis key").isEqualTo(1L);
            // the lease is gone (an eviction, a failover that lost the write): another instance takes the key
            client.call("DEL", lock.fullKey());
        }
        DistlockLock theirs = other.obtain(key);
        java.util.concurrent.ExecutorService thread = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            assertThat(thread.submit(() -> theirs.tryLock()).get()).as("the other instance after the loss").isTrue();
            assertThat(lock.tryLock()).as("the first owner's re-entry while the other instance holds it").isFalse();
            assertThat(lock.tryLock()).as("and again: it is not granted from the stale local hold").isFalse();
            thread.submit(theirs::unlock).get();
            assertThat(lock.tryLock()).as("the first owner once the key is free again: taken anew").isTrue();
            assertThat(thread.submit(() -> other.obtain(key).tryLock()).get()).as("the other instance now").isFalse();
        }
        finally {
            thread.shutdownNow();
        }
        lock.unlock();
        // the hold taken anew backs the outer hold until the outermost unlock, which reports the loss
        assertThat(RespClient.callOnce(redis.port(), "EXISTS", lock.fullKey())).as("held for the outer hold")
                .isEqualTo(1L);
        assertThatThrownBy(lock::unlock).as("the outer hold, whose work may have run beside the other instance")
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("was lost while held");
        assertThat(RespClient.callOnce(redis.port(), "EXISTS", lock.fullKey())).isEqualTo(0L);
        assertThat(lock.isHeldByCurrentThread()).isFalse();
    }
}

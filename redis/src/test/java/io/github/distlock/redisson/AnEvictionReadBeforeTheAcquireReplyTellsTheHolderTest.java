package io.github.distlock.redisson;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.RedisServerExtension;
import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The eviction message comes on Redisson's pub/sub connection, the acquire's reply on a command connection: the
 * message can be read first, before the hold is registered. A fixed lease is told by nothing else (no lease check),
 * so it would run its whole lease unaware that an operator took the key away.
 */
class AnEvictionReadBeforeTheAcquireReplyTellsTheHolderTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    /**
     * The acquire of a fixed lease is carried out by Redis, its reply held on the way back; an operator force-releases
     * the key, and the holder's client reads the eviction message; then the reply arrives. The holder is told at once.
     */
    @Test
    void aFixedLeaseWhoseEvictionWasReadBeforeItsReplyIsToldLost() throws Exception {
        try (RedisTestProxy proxy = RedisTestProxy.start(redis.port())) {
            RedissonClient holderClient = client(proxy.uri());
            RedissonClient operatorClient = client(redis.uri());
            RedissonLockProvider holderSide = new RedissonLockProvider(holderClient);
            RedissonLockProvider operatorSide = new RedissonLockProvider(operatorClient);
            try {
                // registered after the provider's own listener: Redisson calls a channel's listeners in order, so once
                // this one has run the provider has read the message too
                CountDownLatch messageRead = new CountDownLatch(1);
                holderClient.getTopic(Evictions.CHANNEL, StringCodec.INSTANCE)
                        .addListener(String.class, (channel, message) -> messageRead.countDown());
                // Redis knows the lock script from now on: the acquire below goes as one EVALSHA, not EVALSHA, NOSCRIPT,
                // EVAL (the hold would catch the first and leave the lock untaken)
                LockHandle warm = holderSide.acquire(new LockRequest("warm", 0, TimeUnit.SECONDS.toNanos(60), false,
                        LockType.REENTRANT, LockOwner.next())).join();
                assertThat(warm.release()).isTrue();
                LockOwner owner = LockOwner.next();
                RedisTestProxy.Hold acquire = proxy.hold(holderSide.ownerName(owner.id()), true);
                CompletableFuture<LockHandle> pending = holderSide.acquire(new LockRequest("k", 0,
                        TimeUnit.SECONDS.toNanos(60), false, LockType.REENTRANT, owner));
                assertThat(acquire.held.await(5, TimeUnit.SECONDS)).isTrue();
                acquire.letThrough();
                assertThat(acquire.replyArrived.await(5, TimeUnit.SECONDS)).as("the lock taken in Redis").isTrue();

                assertThat(operatorSide.forceRelease("k")).extracting(h -> h.owner())
                        .containsExactly(holderSide.ownerName(owner.id()));
                assertThat(messageRead.await(5, TimeUnit.SECONDS)).as("the eviction message read").isTrue();
                acquire.letReplyThrough();

                LockHandle handle = pending.get(5, TimeUnit.SECONDS);
                assertThat(handle).isNotNull();
                CompletableFuture<String> lost = new CompletableFuture<>();
                handle.whenLost(lost::complete);
                assertThat(lost).as("the holder told, not left to run its 60 s lease")
                        .succeedsWithin(Duration.ofSeconds(5)).isEqualTo(Evictions.REASON);
                assertThat(handle.lostWhileHeld()).isTrue();
                assertThat(RespClient.callOnce(redis.port(), "EXISTS", "k")).as("the lock, evicted").isEqualTo(0L);
            }
            finally {
                holderSide.close();
                operatorSide.close();
                holderClient.shutdown();
                operatorClient.shutdown();
            }
        }
    }

    private static RedissonClient client(String address) {
        Config config = new Config();
        config.useSingleServer().setAddress(address).setTimeout(10_000);
        return Redisson.create(config);
    }
}

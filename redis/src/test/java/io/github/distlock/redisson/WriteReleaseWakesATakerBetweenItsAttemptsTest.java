package io.github.distlock.redisson;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A WRITE taker that found the lock held tries again once subscribed; if the release comes while that attempt's answer
 * ("held") is on its way, the wake-up message arrives before the taker listens for one. Redisson's write-lock release
 * sends READ_UNLOCK, which keeps nothing for a listener still to come: the taker slept beside a free lock for its whole
 * wait (on a Redis Cluster the model suite's third owner met it, within its 5 s). The release must leave a wake-up the
 * taker finds when it starts listening.
 */
class WriteReleaseWakesATakerBetweenItsAttemptsTest extends HandoffTestBase {

    /** The holder's fixed lease, and the taker's wait: far longer than the wake-up may take. */
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(10);

    @Test
    void aWriteReleaseWhileTheTakersSecondAttemptIsAnsweredWakesItAtOnce() throws Exception {
        RedisTestProxy proxy = RedisTestProxy.start(redis.port());
        RedissonLockProvider taker = providerThrough(proxy);
        LockHandle held = a.acquire(new LockRequest("k", 0, LEASE.toNanos(), false, LockType.WRITE, LockOwner.next()))
                .get(5, TimeUnit.SECONDS);
        assertThat(held).isNotNull();

        LockOwner owner = LockOwner.next();
        String field = taker.clientId() + ":" + owner.id() + ":write";
        // the first attempt (lock held) passes; the second, sent once subscribed, reaches Redis and its answer is held
        RedisTestProxy.Hold first = proxy.hold(field, false);
        first.letThrough();
        RedisTestProxy.Hold second = proxy.hold(field, true);
        second.letThrough();
        CompletableFuture<LockHandle> taken = taker.acquire(
                new LockRequest("k", WAIT.toNanos(), 0, false, LockType.WRITE, owner));
        assertThat(second.replyArrived.await(10, TimeUnit.SECONDS)).as("the taker's second attempt answered").isTrue();
        assertThat(redis("HGETALL", "distlock_rw:{k}")).asString().doesNotContain(field);

        long before = proxy.bytesToSubscribers();
        assertThat(held.release()).isTrue();
        assertThat((Long) redis("EXISTS", "distlock_rw:{k}")).as("the write lock after its release").isZero();
        // the wake-up reaches the taker's client while its "held" answer is still on the way
        await().atMost(Duration.ofSeconds(5)).until(() -> proxy.bytesToSubscribers() > before);
        await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(5)).until(() -> !taken.isDone());
        long answered = System.nanoTime();
        second.letReplyThrough();

        LockHandle next = taken.get(WAIT.toSeconds() + 5, TimeUnit.SECONDS);
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - answered);
        assertThat(next).as("the WRITE taker within its %s wait", WAIT).isNotNull();
        // a wake-up, not the end of its wait
        assertThat(waited).as("ms from the answer to the taker holding the lock").isLessThan(2_000);
        assertThat(redis("HGETALL", "distlock_rw:{k}")).asString().contains(field);
        assertThat(next.release()).isTrue();
        assertThat((Long) redis("EXISTS", "distlock_rw:{k}")).isZero();
    }
}

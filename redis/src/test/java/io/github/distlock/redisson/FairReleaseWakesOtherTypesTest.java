package io.github.distlock.redisson;

import java.time.Duration;
import java.util.List;
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
 * A FAIR lock and a REENTRANT lock on one key share one hash; a REENTRANT taker waits for Redisson's unlock message
 * (or the lock's time to live). The FAIR release must send that message when it leaves the key free, or the taker
 * sleeps through a free lock for the rest of the FAIR holder's lease (or its own whole wait).
 */
class FairReleaseWakesOtherTypesTest extends HandoffTestBase {

    /** The FAIR holder's fixed lease: far longer than any wait below, so only a wake-up can end one early. */
    private static final Duration LEASE = Duration.ofSeconds(30);

    @Test
    void aFairReleaseThatLeavesTheKeyFreeWakesAReentrantWaiterAtOnce() throws Exception {
        LockHandle fair = a.acquire(fair("k", Duration.ZERO, LEASE)).join();
        assertThat(fair).isNotNull();
        CompletableFuture<LockHandle> reentrant = b.acquire(reentrant("k", Duration.ofSeconds(10)));
        awaitSubscribed("redisson_lock__channel:{k}");
        assertThat(reentrant).as("the REENTRANT taker, while the FAIR lock is held").isNotDone();
        long released = System.nanoTime();
        assertThat(fair.release()).isTrue();
        LockHandle taken = reentrant.get(10, TimeUnit.SECONDS);
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - released);
        assertThat(taken).as("the REENTRANT taker within its 10 s wait").isNotNull();
        // a wake-up, not the end of a wait or of the 30 s lease
        assertThat(waited).as("ms from the FAIR release to the REENTRANT owner").isLessThan(2_000);
        assertThat(redis("HGETALL", "k")).asString().contains(b.clientId() + ":");
        assertThat(taken.release()).isTrue();
        assertThat((Long) redis("EXISTS", "k", "distlock_queue:{k}", "distlock_waiters:{k}"))
                .as("lock, queue and entries after the last release").isZero();
    }

    /**
     * The model suite's case: a FAIR try-once (wait 0) refused during the hold. It is answered by its one script, which
     * queues nothing, so the release that follows has nobody to hand the lock to and must wake the REENTRANT taker.
     */
    @Test
    void aFairTryOnceRefusedDuringTheHoldLeavesNothingThatDelaysTheNextTaker() throws Exception {
        LockHandle fair = a.acquire(fair("k", Duration.ZERO, LEASE)).join();
        // refused at once: it must leave no queue element, entry or pending script behind
        assertThat(c.acquire(fair("k", Duration.ZERO, Duration.ZERO)).get(5, TimeUnit.SECONDS)).isNull();
        assertThat((Long) redis("EXISTS", "distlock_queue:{k}", "distlock_waiters:{k}"))
                .as("queue and entries after a refused try-once").isZero();
        assertThat(c.handoffs().waiting()).as("waiters of the refused client").isZero();
        CompletableFuture<LockHandle> reentrant = b.acquire(reentrant("k", Duration.ofSeconds(10)));
        awaitSubscribed("redisson_lock__channel:{k}");
        long released = System.nanoTime();
        assertThat(fair.release()).isTrue();
        LockHandle taken = reentrant.get(10, TimeUnit.SECONDS);
        assertThat(taken).as("the REENTRANT taker within its 10 s wait").isNotNull();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - released))
                .as("ms from the FAIR release to the REENTRANT owner").isLessThan(2_000);
        assertThat(taken.release()).isTrue();
    }

    private static LockRequest reentrant(String key, Duration wait) {
        return new LockRequest(key, wait.toNanos(), 0, false, LockType.REENTRANT, LockOwner.next());
    }

    /** Until a client listens on {@code channel}: the REENTRANT taker found the key held and waits for a message. */
    private static void awaitSubscribed(String channel) {
        await().atMost(Duration.ofSeconds(5)).until(() -> {
            List<?> reply = (List<?>) redis("PUBSUB", "NUMSUB", channel);
            return Long.parseLong(reply.get(1).toString()) > 0;
        });
    }
}

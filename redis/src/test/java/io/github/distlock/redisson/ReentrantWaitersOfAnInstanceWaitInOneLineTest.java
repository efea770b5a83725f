package io.github.distlock.redisson;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code REENTRANT} callers of one instance wait for a key in one line ({@link RLockLines}): only the first tries,
 * once per release, and the line answers each caller within its own wait, hands the turn on when a caller stops
 * waiting, and leaves nothing behind — neither in the provider nor a subscription in Redis.
 */
class ReentrantWaitersOfAnInstanceWaitInOneLineTest extends HandoffTestBase {

    private static LockRequest reentrant(String key, Duration wait, Duration lease) {
        return new LockRequest(key, wait.toNanos(), lease.toNanos(), false, LockType.REENTRANT, LockOwner.next());
    }

    /** Subscribers of the key's lock channel, asked of Redis. */
    private static long subscribers(String key) {
        List<?> reply = (List<?>) redis("PUBSUB", "NUMSUB", "redisson_lock__channel:{" + key + "}");
        return (Long) reply.get(1);
    }

    /**
     * Eight threads of one instance take one key 100 times each: every acquisition is exclusive, and the failed tries
     * (each is one {@code PTTL} in Redisson's script, which nothing else on this path sends) stay under one per five
     * acquisitions, where Redisson's own asynchronous wait sends about two per acquisition.
     */
    @Test
    void eightThreadsOnOneKeyTryAboutOncePerAcquisition() throws Exception {
        int threads = 8;
        int each = 100;
        LockHandle warm = a.acquire(reentrant("hot", Duration.ofSeconds(5), Duration.ofSeconds(10))).join();
        assertThat(warm.release()).isTrue();
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        java.util.concurrent.atomic.AtomicLong longestWait = new java.util.concurrent.atomic.AtomicLong();
        long began = System.nanoTime();
        long[] counter = new long[1];
        long failedTriesBefore = calls("pttl");
        long triesBefore = calls("hincrby");
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                done.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < each; i++) {
                        long asked = System.nanoTime();
                        LockHandle handle = a.acquire(reentrant("hot", Duration.ofSeconds(30), Duration.ofSeconds(10)))
                                .get(30, TimeUnit.SECONDS);
                        longestWait.accumulateAndGet(System.nanoTime() - asked, Math::max);
                        assertThat(handle).as("acquired within the wait").isNotNull();
                        if (inside.incrementAndGet() != 1) {
                            overlaps.incrementAndGet();
                        }
                        counter[0]++;
                        inside.decrementAndGet();
                        assertThat(handle.release()).isTrue();
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> future : done) {
                future.get(120, TimeUnit.SECONDS);
            }
        }
        finally {
            pool.shutdownNow();
        }
        long acquisitions = (long) threads * each;
        long failedTries = calls("pttl") - failedTriesBefore;
        assertThat(overlaps).hasValue(0);
        assertThat(counter[0]).isEqualTo(acquisitions);
        // each acquisition and each release runs one HINCRBY: the releases do not try
        assertThat(calls("hincrby") - triesBefore).isEqualTo(2 * acquisitions);
        assertThat(failedTries).as("failed tries for %s acquisitions in %s ms, the longest wait %s ms", acquisitions,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began), TimeUnit.NANOSECONDS.toMillis(longestWait.get()))
                .isLessThanOrEqualTo(acquisitions / 5);
        await("the line and its subscription gone").atMost(Duration.ofSeconds(5))
                .until(() -> a.rlockLines().lines() == 0 && subscribers("hot") == 0);
    }

    /**
     * Behind a first waiter with a long wait, a caller with a short wait is answered "not acquired" at its own deadline,
     * not at the first's; the first then gets the key when another instance releases it, long before the holder's
     * lease would end (the release's message wakes it; that no release goes unheard on a busy key is what
     * {@link #eightThreadsOnOneKeyTryAboutOncePerAcquisition} proves: a deaf line would take a poll per acquisition).
     */
    @Test
    void aWaiterBehindTheFirstIsAnsweredAtItsOwnDeadlineAndTheFirstIsWokenByAnotherInstancesRelease()
            throws Exception {
        LockHandle holder = b.acquire(reentrant("k", Duration.ZERO, Duration.ofSeconds(60))).join();
        CompletableFuture<LockHandle> first = a.acquire(reentrant("k", Duration.ofSeconds(30), Duration.ofSeconds(10)));
        await().atMost(Duration.ofSeconds(5)).until(() -> subscribers("k") == 1);
        long asked = System.nanoTime();
        CompletableFuture<LockHandle> second = a.acquire(reentrant("k", Duration.ofMillis(300), Duration.ofSeconds(10)));
        assertThat(second.get(5, TimeUnit.SECONDS)).as("the second waiter's answer").isNull();
        assertThat(System.nanoTime() - asked).as("answered at its deadline")
                .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(300));
        assertThat(first).isNotDone();
        assertThat(holder.release()).isTrue();
        LockHandle had = first.get(5, TimeUnit.SECONDS);
        assertThat(had).isNotNull();
        assertThat(redis("HEXISTS", "k", a.clientId() + ":" + ((RedissonLockHandle) had).owner())).isEqualTo(1L);
        assertThat(had.release()).isTrue();
        await().atMost(Duration.ofSeconds(5)).until(() -> a.rlockLines().lines() == 0 && subscribers("k") == 0);
    }

    /** The first waiter stops waiting (its caller cancels): the next in line takes the key at its release. */
    @Test
    void aFirstWaiterThatStopsWaitingHandsTheTurnOn() throws Exception {
        LockHandle holder = b.acquire(reentrant("k", Duration.ZERO, Duration.ofSeconds(60))).join();
        CompletableFuture<LockHandle> first = a.acquire(reentrant("k", Duration.ofSeconds(30), Duration.ofSeconds(10)));
        CompletableFuture<LockHandle> second = a.acquire(reentrant("k", Duration.ofSeconds(30), Duration.ofSeconds(10)));
        await().atMost(Duration.ofSeconds(5)).until(() -> a.rlockLines().waiting("k") == 2);
        assertThat(first.cancel(false)).isTrue();
        assertThat(holder.release()).isTrue();
        LockHandle had = second.get(5, TimeUnit.SECONDS);
        assertThat(had).isNotNull();
        assertThat((Long) redis("HLEN", "k")).as("one holder: the second waiter").isEqualTo(1L);
        assertThat(had.release()).isTrue();
        assertThat(redis("EXISTS", "k")).isEqualTo(0L);
    }

    /**
     * A holder that vanished without a release (its process died: no message) leaves the key to its time to live: the
     * first waiter tries again then, not at the end of its own wait.
     */
    @Test
    void aHolderThatDiedWithoutAMessageIsOutwaitedByItsTimeToLive() throws Exception {
        redis("HSET", "k", "gone-client:1", "1");
        redis("PEXPIRE", "k", "400");
        long asked = System.nanoTime();
        LockHandle had = a.acquire(reentrant("k", Duration.ofSeconds(30), Duration.ofSeconds(10)))
                .get(10, TimeUnit.SECONDS);
        long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - asked);
        assertThat(had).isNotNull();
        // the poll (a third of the watchdog timeout, 1 s) would come later
        assertThat(tookMillis).as("waited for the time to live, not the poll nor the wait").isBetween(300L, 900L);
        assertThat(had.release()).isTrue();
    }

    /** Closing the provider answers every waiter of its lines at once and unsubscribes. */
    @Test
    void closingTheProviderAnswersItsWaiters() throws Exception {
        LockHandle holder = b.acquire(reentrant("k", Duration.ZERO, Duration.ofSeconds(60))).join();
        CompletableFuture<LockHandle> first = a.acquire(reentrant("k", Duration.ofSeconds(30), Duration.ofSeconds(10)));
        CompletableFuture<LockHandle> second = a.acquire(reentrant("k", Duration.ofSeconds(30), Duration.ofSeconds(10)));
        await().atMost(Duration.ofSeconds(5)).until(() -> subscribers("k") == 1);
        a.close();
        for (CompletableFuture<LockHandle> waiter : List.of(first, second)) {
            assertThat(waiter).failsWithin(Duration.ofSeconds(5)).withThrowableThat()
                    .withMessageContaining("closed while waiting for 'k'");
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> subscribers("k") == 0);
        assertThat((Long) redis("HLEN", "k")).as("the holder alone").isEqualTo(1L);
        assertThat(holder.release()).isTrue();
    }

    /**
     * A caller behind the first whose short wait runs out before its turn asks Redis once on its own before it is
     * answered: here the key was freed without a message (deleted behind the lock's back), which the first, subscribed,
     * would find only at the old holder's time to live — the caller behind takes it.
     */
    @Test
    void aCallerBehindTheFirstAsksRedisOnceBeforeItsWaitEnds() throws Exception {
        redis("HSET", "k", "gone-client:1", "1");
        redis("PEXPIRE", "k", "60000");
        CompletableFuture<LockHandle> first = a.acquire(reentrant("k", Duration.ofSeconds(30), Duration.ofSeconds(10)));
        await().atMost(Duration.ofSeconds(5)).until(() -> a.rlockLines().waiting("k") == 1);
        assertThat(redis("DEL", "k")).isEqualTo(1L);
        CompletableFuture<LockHandle> behind = a.acquire(reentrant("k", Duration.ofMillis(150), Duration.ofSeconds(10)));
        LockHandle had = behind.get(5, TimeUnit.SECONDS);
        assertThat(had).as("the caller behind, at the end of its wait").isNotNull();
        assertThat(first).isNotDone();
        // its release sends a message: the first takes the key
        assertThat(had.release()).isTrue();
        LockHandle firstHad = first.get(5, TimeUnit.SECONDS);
        assertThat(firstHad).isNotNull();
        assertThat(firstHad.release()).isTrue();
    }

    /**
     * The provider closes while the first waiter's try is on its way: the waiter is answered at once, not left to
     * timers that no longer run; the try, let through later, finds the key held and takes nothing.
     */
    @Test
    void closingTheProviderAnswersAWaiterWhoseTryIsOnItsWay() throws Exception {
        RedisTestProxy proxy = RedisTestProxy.start(redis.port());
        RedissonLockProvider slow = providerThrough(proxy);
        LockHandle holder = b.acquire(reentrant("k", Duration.ZERO, Duration.ofSeconds(60))).join();
        LockRequest request = reentrant("k", Duration.ofSeconds(30), Duration.ofSeconds(10));
        CompletableFuture<LockHandle> waiter = slow.acquire(request);
        await().atMost(Duration.ofSeconds(5)).until(() -> slow.rlockLines().waiting("k") == 1);
        // its next try is held on its way: an unlock message (sent by hand: the key stays held) makes it try
        RedisTestProxy.Hold tryOnItsWay = proxy.hold(slow.clientId() + ":" + request.owner().id(), false);
        redis("PUBLISH", "redisson_lock__channel:{k}", "0");
        assertThat(tryOnItsWay.held.await(5, TimeUnit.SECONDS)).as("a try held").isTrue();
        slow.close();
        assertThat(waiter).failsWithin(Duration.ofSeconds(5)).withThrowableThat()
                .withMessageContaining("closed while waiting for 'k'");
        // the key is free when the try arrives: it takes the lock, for a caller who was told the provider closed
        assertThat(holder.release()).isTrue();
        long taken = calls("hincrby");
        tryOnItsWay.letThrough();
        await().atMost(Duration.ofSeconds(5)).until(() -> calls("hincrby") > taken);
        await("the lock the late try took, given back").atMost(Duration.ofSeconds(5))
                .until(() -> (Long) redis("EXISTS", "k") == 0L);
    }
}

package io.github.distlock.reliability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@link LockType#FAIR}, fault 1: the holder's JVM is killed with SIGKILL while waiters of two other clients are queued
 * behind it. Its lock must outlive it by its watchdog timeout (the waiters get nothing before the lock's PTTL, read
 * from Redis after the kill, has run out) and then pass to the waiters one by one in the order they queued, each alone
 * in the lock (the only field of the lock hash while it runs is its own).
 */
class FairHolderCrashTest {

    private static final Duration WATCHDOG = Duration.ofSeconds(2);
    private static final Duration HOLDER_START = Duration.ofSeconds(60);
    private static final int WAITERS = 6;
    private static final String KEY = "fair:crash";
    private static final String FULL_KEY = "lock:" + KEY;

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    /** One waiter's turn, seen from inside the lock. */
    record Grant(int waiter, long atNanos, Map<String, String> lockHash, long pttl) {
    }

    @Test
    void waitersQueuedBehindAKilledHolderGetTheLockInQueueOrderOnceItsWatchdogLeaseRanOutAndNotBefore() throws Exception {
        Distlock.app(redis.port(), WATCHDOG).run(appA -> Distlock.app(redis.port(), WATCHDOG).run(appB -> {
            List<LockTemplate> clients = List.of(appA.getBean(LockTemplate.class), appB.getBean(LockTemplate.class));
            Queue<Grant> grants = new ConcurrentLinkedQueue<>();
            Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
            AtomicInteger inside = new AtomicInteger();
            AtomicInteger overlaps = new AtomicInteger();
            List<Thread> waiters = new ArrayList<>();
            try (RedisInspector redisView = new RedisInspector(redis.port());
                    HolderProcess holder = HolderProcess.start(redis.port(), KEY, Duration.ZERO, WATCHDOG, LockType.FAIR)) {
                holder.awaitHolding(HOLDER_START);
                Map<String, String> holderHash = redisView.hash(FULL_KEY);
                assertThat(holderHash).hasSize(1).containsValue("1");
                String holderField = holderHash.keySet().iterator().next();

                // waiters of two clients, queued one after the other: the queue order is the index order
                for (int i = 0; i < WAITERS; i++) {
                    int index = i;
                    LockTemplate locks = clients.get(i % 2);
                    long scriptCallsBefore = RedisInspector.scriptCalls(redisView.commandCalls());
                    Thread waiter = new Thread(() -> {
                        try {
                            locks.run(KEY, FairWaiters.fair(Duration.ofSeconds(30)), () -> {
                                long at = System.nanoTime();
                                if (inside.incrementAndGet() > 1) {
                                    overlaps.incrementAndGet();
                                }
                                grants.add(new Grant(index, at, redisView.hash(FULL_KEY), redisView.pttl(FULL_KEY)));
                                inside.decrementAndGet();
                            });
                        }
                        catch (Throwable ex) {
                            failures.add(ex);
                        }
                    }, "fair-waiter-" + i);
                    waiter.start();
                    waiters.add(waiter);
                    FairWaiters.awaitQueued(waiter, redisView, scriptCallsBefore);
                }
                // the holder still lives: its watchdog keeps the lock, nobody got it
                assertThat(grants).isEmpty();
                assertThat(redisView.hash(FULL_KEY)).containsOnlyKeys(holderField);

                holder.kill();
                // no renewal can come any more: the lock's remaining life is now fixed
                long askedAt = System.nanoTime();
                long pttlAfterKill = redisView.pttl(FULL_KEY);
                long expiresNoSoonerThan = askedAt + pttlAfterKill * 1_000_000;
                assertThat(pttlAfterKill).as("PTTL of the dead holder's lock").isBetween(1L, WATCHDOG.toMillis());

                await().atMost(WATCHDOG.plusSeconds(10)).until(() -> grants.size() + failures.size() == WAITERS);
                for (Thread waiter : waiters) {
                    waiter.join(10_000);
                }

                List<Grant> inOrder = List.copyOf(grants);
                long firstAfterExpiryMs = (inOrder.get(0).atNanos() - expiresNoSoonerThan) / 1_000_000;
                long handOffsMs = (inOrder.get(WAITERS - 1).atNanos() - inOrder.get(0).atNanos()) / 1_000_000;
                System.out.printf("MEASURED fair crash: %d waiters over 2 clients; PTTL after the kill %d ms (watchdog "
                        + "%d ms); first grant %d ms after that PTTL ran out; %d hand-offs took %d ms; grant order %s%n",
                        WAITERS, pttlAfterKill, WATCHDOG.toMillis(), firstAfterExpiryMs, WAITERS - 1, handOffsMs,
                        inOrder.stream().map(Grant::waiter).toList());

                assertThat(failures).isEmpty();
                assertThat(overlaps.get()).isZero();
                // never before the dead holder's lease ran out in Redis (2 ms for Redis's rounding of PTTL)
                assertThat(firstAfterExpiryMs).isGreaterThanOrEqualTo(-2);
                // and not a whole watchdog timeout later either: the waiters notice the expiry on their own
                assertThat(firstAfterExpiryMs).isLessThan(WATCHDOG.toMillis());
                assertThat(inOrder).extracting(Grant::waiter).containsExactly(0, 1, 2, 3, 4, 5);
                List<String> waiterFields = new ArrayList<>();
                for (Grant grant : inOrder) {
                    // alone in the lock: one field, not the dead holder's, and the lock has a live lease
                    assertThat(grant.lockHash()).hasSize(1).doesNotContainKey(holderField);
                    assertThat(grant.pttl()).isPositive();
                    waiterFields.add(grant.lockHash().keySet().iterator().next());
                }
                assertThat(waiterFields).doesNotHaveDuplicates();
                await().atMost(Duration.ofSeconds(5)).until(() -> !redisView.exists(FULL_KEY));
            }
            finally {
                waiters.forEach(Thread::interrupt);
            }
        }));
    }
}

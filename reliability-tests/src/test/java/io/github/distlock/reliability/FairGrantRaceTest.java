package io.github.distlock.reliability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockContext;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link LockType#FAIR}: the head waiter W gives up (its wait runs out, or it is interrupted) at the very moment the
 * holder H releases and the lock is being granted to it, raced many times with the release moved around W's deadline
 * or the interrupt moved around the release. Whatever W ends up with, the waiter V queued behind it must get the lock
 * within {@link #NEXT_WAITER_BOUND}, far less than a lease (watchdog {@link #WATCHDOG}): a lock granted to a waiter that
 * has left must not stay held by nobody. And W's next call, on the same pooled thread and key, must behave as a first
 * call: no interrupt, no lock context and no lock left behind by the race.
 */
class FairGrantRaceTest {

    private static final Duration WATCHDOG = Duration.ofSeconds(10);
    private static final Duration NEXT_WAITER_BOUND = Duration.ofMillis(1_500);
    private static final int ROUNDS = 16;
    /** W's wait in the timeout race; the release is put within +-{@link #SPREAD_MICROS} of its end. */
    private static final Duration W_WAIT = Duration.ofMillis(400);
    private static final long SPREAD_MICROS = 6_000;

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    /** What one round saw. */
    record Round(int round, boolean wAcquired, String wFailure, long vAfterReleaseMs, Map<String, String> hashSeenByV) {
    }

    @Test
    void waiterTimingOutAsItIsGrantedLeavesNoLockHeldByNobodyAndItsThreadLocksNormallyNext() throws Exception {
        race(false);
    }

    @Test
    void waiterInterruptedAsItIsGrantedLeavesNoLockHeldByNobodyAndItsThreadLocksNormallyNext() throws Exception {
        race(true);
    }

    private void race(boolean interrupt) throws Exception {
        ExecutorService holderThread = Executors.newSingleThreadExecutor();
        // one pooled thread for W, reused by every round and by W's follow-up calls
        ExecutorService waiterThread = Executors.newSingleThreadExecutor();
        ExecutorService nextThread = Executors.newSingleThreadExecutor();
        try (RedisInspector redisView = new RedisInspector(redis.port())) {
            Distlock.app(redis.port(), WATCHDOG).run(app -> {
                LockTemplate locks = app.getBean(LockTemplate.class);
                List<Round> rounds = new ArrayList<>();
                for (int round = 0; round < ROUNDS; round++) {
                    String key = "fair:race:" + (interrupt ? "interrupt:" : "timeout:") + round;
                    String fullKey = "lock:" + key;
                    CountDownLatch holding = new CountDownLatch(1);
                    CountDownLatch release = new CountDownLatch(1);
                    Future<?> holder = holderThread.submit(() -> locks.run(key, FairWaiters.fair(Duration.ZERO), () -> {
                        holding.countDown();
                        Latches.await(release);
                    }));
                    Latches.await(holding);

                    AtomicReference<Thread> wThread = new AtomicReference<>();
                    AtomicLong wStartedAt = new AtomicLong();
                    long scripts = RedisInspector.scriptCalls(redisView.commandCalls());
                    Future<Throwable> waiter = waiterThread.submit(() -> {
                        wThread.set(Thread.currentThread());
                        wStartedAt.set(System.nanoTime());
                        try {
                            locks.run(key, FairWaiters.fair(interrupt ? Duration.ofSeconds(10) : W_WAIT), () -> {
                            });
                            return null;
                        }
                        catch (LockAcquisitionException ex) {
                            // as an application would: it has handled the interrupt
                            Thread.interrupted();
                            return ex;
                        }
                    });
                    org.awaitility.Awaitility.await().until(() -> wThread.get() != null);
                    FairWaiters.awaitQueued(wThread.get(), redisView, scripts);

                    AtomicLong vAt = new AtomicLong();
                    AtomicReference<Map<String, String>> vSaw = new AtomicReference<>();
                    AtomicReference<Thread> vThread = new AtomicReference<>();
                    scripts = RedisInspector.scriptCalls(redisView.commandCalls());
                    Future<?> next = nextThread.submit(() -> {
                        vThread.set(Thread.currentThread());
                        // a wait just beyond the bound: a V left waiting for a lock nobody holds fails the round
                        // there and then, instead of after a whole lease
                        locks.tryRun(key, FairWaiters.fair(NEXT_WAITER_BOUND.plusMillis(500)), () -> {
                            vAt.set(System.nanoTime());
                            vSaw.set(redisView.hash(fullKey));
                        });
                    });
                    org.awaitility.Awaitility.await().until(() -> vThread.get() != null);
                    FairWaiters.awaitQueued(vThread.get(), redisView, scripts);

                    // spread the fault around the moment of the grant, a different offset each round
                    long offsetNanos = (SPREAD_MICROS * 1_000 * (2 * round - (ROUNDS - 1))) / (ROUNDS - 1);
                    long releasedAt;
                    if (interrupt) {
                        releasedAt = System.nanoTime();
                        release.countDown();
                        // fault injection at a chosen instant, not a wait for an outcome
                        LockSupport.parkNanos(Math.abs(offsetNanos) / 3);
                        wThread.get().interrupt();
                    }
                    else {
                        long deadline = wStartedAt.get() + W_WAIT.toNanos() + offsetNanos;
                        LockSupport.parkNanos(deadline - System.nanoTime());
                        releasedAt = System.nanoTime();
                        release.countDown();
                    }
                    holder.get(30, TimeUnit.SECONDS);
                    Throwable wFailure = waiter.get(30, TimeUnit.SECONDS);
                    next.get(30, TimeUnit.SECONDS);
                    rounds.add(new Round(round, wFailure == null, (wFailure == null) ? null : wFailure.getMessage(),
                            (vAt.get() == 0) ? Long.MAX_VALUE : (vAt.get() - releasedAt) / 1_000_000,
                            (vSaw.get() == null) ? Map.of() : vSaw.get()));

                    // W's next call on the same pooled thread and key: a plain first acquisition
                    Map<String, String> seenByW = waiterThread.submit(() -> {
                        assertThat(Thread.currentThread()).isSameAs(wThread.get());
                        assertThat(Thread.currentThread().isInterrupted()).isFalse();
                        assertThat(LockContext.heldKeys()).isEmpty();
                        AtomicReference<Map<String, String>> saw = new AtomicReference<>();
                        long start = System.nanoTime();
                        locks.run(key, FairWaiters.fair(Duration.ofSeconds(2)), () -> {
                            assertThat(LockContext.heldKeys()).containsExactly(fullKey);
                            saw.set(redisView.hash(fullKey));
                        });
                        assertThat(System.nanoTime() - start).isLessThan(NEXT_WAITER_BOUND.toNanos());
                        return saw.get();
                    }).get(30, TimeUnit.SECONDS);
                    assertThat(seenByW).as("the lock hash W's next call saw").hasSize(1);
                    // a new owner, not one left over from V (an empty view: V got nothing, reported below)
                    rounds.get(round).hashSeenByV().keySet().forEach(v -> assertThat(seenByW).doesNotContainKey(v));
                    // nothing left behind: no grant to a waiter that has gone, no lock of W's
                    assertThat(redisView.exists(fullKey)).as("lock %s after round %d", fullKey, round).isFalse();
                }

                long acquired = rounds.stream().filter(Round::wAcquired).count();
                System.out.printf("MEASURED fair %s race: %d rounds, W acquired in %d and gave up in %d; V got the "
                        + "lock %s ms after the release (%d = not within its wait) (max %d ms, bound %d ms, lease %d ms); W failures: %s%n",
                        interrupt ? "interrupt" : "timeout", ROUNDS, acquired, ROUNDS - acquired,
                        rounds.stream().map(Round::vAfterReleaseMs).toList(), Long.MAX_VALUE,
                        rounds.stream().mapToLong(Round::vAfterReleaseMs).max().orElseThrow(),
                        NEXT_WAITER_BOUND.toMillis(), WATCHDOG.toMillis(),
                        rounds.stream().map(Round::wFailure).filter(java.util.Objects::nonNull).distinct().toList());
                assertThat(rounds).allSatisfy(r -> {
                    assertThat(r.vAfterReleaseMs()).as("round %d: V's grant after the release", r.round())
                            .isLessThan(NEXT_WAITER_BOUND.toMillis());
                    // V alone in the lock, which it holds with a field of its own
                    assertThat(r.hashSeenByV()).hasSize(1).containsValue("1");
                });
                assertThat(rounds).filteredOn(r -> !r.wAcquired()).allSatisfy(r -> assertThat(r.wFailure())
                        .startsWith("Could not acquire lock 'lock:fair:race:")
                        .contains(interrupt ? "(interrupted while waiting)" : "within the wait time of 400 ms"));
            });
        }
        finally {
            holderThread.shutdownNow();
            waiterThread.shutdownNow();
            nextThread.shutdownNow();
        }
    }
}

package io.github.distlock.reliability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockBackendException;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import io.github.distlock.redisson.autoconfigure.RedissonConfigCustomizer;
import io.github.distlock.testsupport.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.redisson.config.ConstantDelay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@link LockType#FAIR}: Redis is stopped and started again while a holder and a queue of waiters exist, once empty
 * (no persistence) and once with the data set saved at shutdown and loaded again (RDB), queue state included. The
 * holder ends its work while Redis is down. Each waiter must either get the lock or fail with
 * {@link LockAcquisitionException} / {@link LockBackendException} within its wait (plus the time a command may take to
 * fail), never stay stuck past it; no two bodies may run at once, each finds only its own field in the lock hash; and
 * the queue recovers: waiters get the lock after the restart.
 */
class FairRedisRestartTest {

    private static final Duration WATCHDOG = Duration.ofSeconds(1);
    private static final Duration COMMAND_TIMEOUT = Duration.ofMillis(500);
    private static final int RETRY_ATTEMPTS = 1;
    private static final Duration RETRY_DELAY = Duration.ofMillis(200);
    private static final Duration WAIT = Duration.ofSeconds(6);
    private static final int WAITERS = 5;
    private static final String KEY = "fair:restart";
    private static final String FULL_KEY = "lock:" + KEY;

    private final RedisServer redis = RedisServer.start();

    @AfterEach
    void stopRedis() {
        redis.close();
    }

    /** One waiter's call as it ended. */
    record Call(int waiter, long startNanos, long endNanos, boolean acquired, long acquiredAtNanos,
            Map<String, String> hashSeen, Throwable failure) {

        long millis() {
            return (endNanos - startNanos) / 1_000_000;
        }
    }

    @Test
    void queueSurvivesARestartWithoutPersistence() throws Exception {
        restartWithQueue(false);
    }

    @Test
    void queueSurvivesARestartWithItsStateSavedAndLoaded() throws Exception {
        restartWithQueue(true);
    }

    private void restartWithQueue(boolean persistence) throws Exception {
        try (RedisInspector redisView = new RedisInspector(redis.port())) {
            Distlock.app(redis.port(), WATCHDOG)
                    .withPropertyValues("spring.data.redis.timeout=" + COMMAND_TIMEOUT.toMillis() + "ms",
                            "spring.data.redis.connect-timeout=" + COMMAND_TIMEOUT.toMillis() + "ms")
                    .withBean(RedissonConfigCustomizer.class, () -> config -> config.useSingleServer()
                            .setRetryAttempts(RETRY_ATTEMPTS).setRetryDelay(new ConstantDelay(RETRY_DELAY)))
                    .run(app -> {
                LockTemplate locks = app.getBean(LockTemplate.class);
                AtomicInteger inside = new AtomicInteger();
                AtomicInteger overlaps = new AtomicInteger();
                CountDownLatch holding = new CountDownLatch(1);
                CountDownLatch holderMayLeave = new CountDownLatch(1);
                AtomicReference<Throwable> holderOutcome = new AtomicReference<>();
                CountDownLatch holderLeft = new CountDownLatch(1);
                Thread holder = new Thread(() -> {
                    try {
                        locks.run(KEY, FairWaiters.fair(Duration.ZERO), () -> {
                            inside.incrementAndGet();
                            holding.countDown();
                            Latches.await(holderMayLeave);
                            inside.decrementAndGet();
                        });
                    }
                    catch (Throwable ex) {
                        holderOutcome.set(ex);
                    }
                    finally {
                        holderLeft.countDown();
                    }
                }, "fair-restart-holder");
                holder.start();
                Latches.await(holding);

                Queue<Call> calls = new ConcurrentLinkedQueue<>();
                List<Thread> waiters = new ArrayList<>();
                for (int i = 0; i < WAITERS; i++) {
                    int index = i;
                    long scripts = RedisInspector.scriptCalls(redisView.commandCalls());
                    Thread waiter = new Thread(() -> {
                        long start = System.nanoTime();
                        AtomicReference<Map<String, String>> seen = new AtomicReference<>();
                        long[] acquiredAt = new long[1];
                        try {
                            locks.run(KEY, FairWaiters.fair(WAIT), () -> {
                                acquiredAt[0] = System.nanoTime();
                                if (inside.incrementAndGet() > 1) {
                                    overlaps.incrementAndGet();
                                }
                                try {
                                    seen.set(redisView.hash(FULL_KEY));
                                }
                                finally {
                                    inside.decrementAndGet();
                                }
                            });
                            calls.add(new Call(index, start, System.nanoTime(), true, acquiredAt[0], seen.get(), null));
                        }
                        catch (Throwable ex) {
                            calls.add(new Call(index, start, System.nanoTime(), acquiredAt[0] != 0, acquiredAt[0],
                                    seen.get(), ex));
                        }
                    }, "fair-restart-waiter-" + i);
                    waiter.start();
                    waiters.add(waiter);
                    FairWaiters.awaitQueued(waiter, redisView, scripts);
                }

                redisView.sync().set("restart:marker", "written before the stop");
                if (persistence) {
                    // saved by the shutdown that SIGTERM starts, loaded by the next start (the same directory)
                    redisView.sync().configSet("save", "3600 1");
                }
                redis.stop();
                long stoppedAt = System.nanoTime();
                // the holder finishes its work while Redis is down: its release cannot reach Redis
                holderMayLeave.countDown();
                Latches.await(holderLeft);
                redis.restart();
                long restartedAt = System.nanoTime();
                boolean restored = redisView.exists("restart:marker");

                for (Thread waiter : waiters) {
                    waiter.join(WAIT.multipliedBy(3).toMillis());
                }
                List<Call> ended = List.copyOf(calls);
                long phaseBound = (1 + RETRY_ATTEMPTS) * COMMAND_TIMEOUT.toMillis() + RETRY_ATTEMPTS * RETRY_DELAY.toMillis();
                Map<String, Long> outcomes = ended.stream().collect(Collectors.groupingBy(
                        c -> (c.failure() == null) ? "acquired" : c.failure().getClass().getSimpleName(),
                        Collectors.counting()));
                System.out.printf("MEASURED fair restart (%s): Redis down %d ms, data restored: %s; %d waiters: %s; "
                        + "call times %s ms (wait %d ms + up to %d ms per failing phase); acquired after the restart at "
                        + "+%s ms; holder's call: %s%n", persistence ? "RDB saved and loaded" : "no persistence",
                        (restartedAt - stoppedAt) / 1_000_000, restored, WAITERS, outcomes,
                        ended.stream().map(Call::millis).toList(), WAIT.toMillis(), phaseBound,
                        ended.stream().filter(Call::acquired).map(c -> (c.acquiredAtNanos() - restartedAt) / 1_000_000)
                                .toList(), String.valueOf(holderOutcome.get()));

                assertThat(restored).as("data set restored by the restart").isEqualTo(persistence);
                assertThat(ended).hasSize(WAITERS);
                assertThat(overlaps.get()).as("bodies running at once").isZero();
                assertThat(ended).allSatisfy(c -> {
                    assertThat(c.failure()).satisfiesAnyOf(
                            f -> assertThat(f).isNull(),
                            f -> assertThat(f).isInstanceOf(LockAcquisitionException.class)
                                    .hasMessageStartingWith("Could not acquire lock '" + FULL_KEY + "'"),
                            f -> assertThat(f).isInstanceOf(LockBackendException.class));
                    // never stuck past the wait: the wait, plus one failing acquisition and one failing release
                    assertThat(c.millis()).isLessThan(WAIT.toMillis() + 2 * phaseBound + 2_000);
                    if (c.acquired()) {
                        assertThat(c.hashSeen()).as("lock hash seen by waiter %d", c.waiter()).hasSize(1)
                                .containsValue("1");
                    }
                });
                // the queue recovers: the lock is had again after the restart
                assertThat(ended).filteredOn(c -> c.acquired() && c.acquiredAtNanos() > restartedAt).isNotEmpty();
                await().atMost(WATCHDOG.plusSeconds(5)).until(() -> !redisView.exists(FULL_KEY));
            });
        }
    }
}

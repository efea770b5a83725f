package io.github.distlock.reliability;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockListener;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Fault 2 (the everyday one): the guarded work takes much longer than the watchdog timeout. The watchdog must keep the
 * lock the whole time: a contender in another application (another Redisson client) polling throughout never gets in.
 */
class LongWorkTest {

    private static final Duration WATCHDOG = Duration.ofSeconds(1);
    private static final Duration WORK = WATCHDOG.multipliedBy(7).dividedBy(2);

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    @Test
    void watchdogKeepsTheLockForWorkLastingThreeAndAHalfWatchdogTimeouts() {
        RecordingListener events = new RecordingListener();
        Distlock.app(redis.port(), WATCHDOG).withBean(LockListener.class, () -> events).run(holderApp -> {
            Distlock.app(redis.port(), WATCHDOG).run(contenderApp -> {
                LockTemplate holder = holderApp.getBean(LockTemplate.class);
                LockTemplate contender = contenderApp.getBean(LockTemplate.class);
                try (RedisInspector redisView = new RedisInspector(redis.port())) {
                    CountDownLatch holding = new CountDownLatch(1);
                    CountDownLatch workDone = new CountDownLatch(1);
                    CompletableFuture<Void> work = CompletableFuture.runAsync(() -> holder.run("long-work",
                            LockOptions.waitFor(Duration.ZERO).withLeaseTime(LockOptions.WATCHDOG), () -> {
                                holding.countDown();
                                // the "work": as long as the contender keeps polling
                                Latches.await(workDone);
                            }));
                    assertThat(holding.await(10, TimeUnit.SECONDS)).isTrue();
                    long start = System.nanoTime();

                    AtomicInteger attempts = new AtomicInteger();
                    AtomicInteger successes = new AtomicInteger();
                    AtomicLong minTtl = new AtomicLong(Long.MAX_VALUE);
                    await().during(WORK).atMost(WORK.plusSeconds(5)).pollInterval(Duration.ofMillis(10)).until(() -> {
                        attempts.incrementAndGet();
                        if (contender.tryRun("long-work", LockOptions.waitFor(Duration.ZERO), () -> { })) {
                            successes.incrementAndGet();
                        }
                        minTtl.accumulateAndGet(redisView.pttl("lock:long-work"), Math::min);
                        return successes.get() == 0;
                    });
                    long heldMs = (System.nanoTime() - start) / 1_000_000;
                    workDone.countDown();
                    work.get(10, TimeUnit.SECONDS);

                    System.out.printf("MEASURED long work: held %d ms (%.1f x watchdog timeout %d ms); contender "
                            + "attempts %d, successes %d; lowest PTTL seen %d ms%n", heldMs,
                            heldMs / (double) WATCHDOG.toMillis(), WATCHDOG.toMillis(), attempts.get(), successes.get(),
                            minTtl.get());
                    assertThat(heldMs).isGreaterThanOrEqualTo(3 * WATCHDOG.toMillis());
                    assertThat(attempts.get()).isGreaterThan(50);
                    assertThat(successes.get()).isZero();
                    assertThat(minTtl.get()).isPositive();
                    assertThat(events.released).hasSize(1);
                    assertThat(events.leaseLost).isEmpty();
                    // once released, the contender gets in at once
                    assertThat(contender.tryRun("long-work", LockOptions.waitFor(Duration.ZERO), () -> { })).isTrue();
                }
            });
        });
    }
}

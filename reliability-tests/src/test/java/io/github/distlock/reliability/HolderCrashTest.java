package io.github.distlock.reliability;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Fault 1: the holder's process is killed with SIGKILL while it holds the lock, so it never releases it. The lock must
 * stay taken while the holder lives and come free on its own: within the watchdog timeout in watchdog mode, at the end
 * of the lease with a fixed lease.
 */
class HolderCrashTest {

    private static final Duration WATCHDOG = Duration.ofSeconds(1);
    private static final Duration HOLDER_START = Duration.ofSeconds(60);

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    @Test
    void watchdogLockOfAKilledHolderComesFreeWithinTheWatchdogTimeoutAndNotBefore() {
        Distlock.app(redis.port(), WATCHDOG).run(context -> {
            LockTemplate contender = context.getBean(LockTemplate.class);
            try (RedisInspector redisView = new RedisInspector(redis.port());
                    HolderProcess holder = HolderProcess.start(redis.port(), "crash:watchdog", Duration.ZERO, WATCHDOG)) {
                holder.awaitHolding(HOLDER_START);

                // while the holder lives, its watchdog must keep the lock over several timeouts
                AtomicInteger attempts = new AtomicInteger();
                Duration alive = WATCHDOG.multipliedBy(5).dividedBy(2);
                await().during(alive).atMost(alive.plusSeconds(3)).pollInterval(Duration.ofMillis(20))
                        .until(() -> {
                            attempts.incrementAndGet();
                            return !tryOnce(contender, "crash:watchdog") && holder.isAlive();
                        });
                long ttlAtKill = redisView.pttl("lock:crash:watchdog");

                holder.kill();
                long killedAt = System.nanoTime();
                await().atMost(WATCHDOG.plusSeconds(1)).pollInterval(Duration.ofMillis(10))
                        .until(() -> tryOnce(contender, "crash:watchdog"));
                long freeAfterMs = (System.nanoTime() - killedAt) / 1_000_000;

                System.out.printf("MEASURED crash/watchdog: %d contender attempts failed over %d ms while the holder "
                        + "lived; PTTL at kill %d ms; lock free %d ms after the holder died (watchdog timeout %d ms)%n",
                        attempts.get(), alive.toMillis(), ttlAtKill, freeAfterMs, WATCHDOG.toMillis());
                assertThat(attempts.get()).isGreaterThan(20);
                assertThat(ttlAtKill).isPositive();
            }
        });
    }

    @Test
    void fixedLeaseLockOfAKilledHolderComesFreeAtTheEndOfTheLease() {
        Duration lease = Duration.ofMillis(2_500);
        Distlock.app(redis.port(), WATCHDOG).run(context -> {
            LockTemplate contender = context.getBean(LockTemplate.class);
            try (HolderProcess holder = HolderProcess.start(redis.port(), "crash:lease", lease, WATCHDOG)) {
                long askedAt = holder.awaitHolding(HOLDER_START);
                long seenHoldingAt = System.currentTimeMillis();
                holder.kill();
                long killedAt = System.currentTimeMillis();

                AtomicInteger attempts = new AtomicInteger();
                await().atMost(lease.plusSeconds(1)).pollInterval(Duration.ofMillis(10))
                        .until(() -> {
                            attempts.incrementAndGet();
                            return tryOnce(contender, "crash:lease");
                        });
                long freeAt = System.currentTimeMillis();

                System.out.printf("MEASURED crash/lease: lease %d ms; holder killed %d ms after it asked for the lock; "
                        + "lock free %d ms after it was asked for (%d ms after the kill), %d contender attempts%n",
                        lease.toMillis(), killedAt - askedAt, freeAt - askedAt, freeAt - killedAt, attempts.get());
                // the lease starts in Redis after the holder asked for it, so it cannot end earlier than this
                assertThat(freeAt - askedAt).isGreaterThanOrEqualTo(lease.toMillis() - 5);
                assertThat(freeAt - seenHoldingAt).isLessThanOrEqualTo(lease.toMillis() + 1_000);
                assertThat(attempts.get()).isGreaterThan(1);
            }
        });
    }

    /**
     * permits = 2, both taken by holder JVMs (watchdog); one is SIGKILLed: while it lived its permit was renewed (no
     * third holder got in), and after the kill the permit comes back within the watchdog timeout, while the live
     * holder's permit stays taken.
     */
    @Test
    void permitOfAKilledHolderComesBackWithinTheWatchdogTimeout() {
        Distlock.app(redis.port(), WATCHDOG).run(context -> {
            LockTemplate contender = context.getBean(LockTemplate.class);
            LockOptions permit = LockOptions.waitFor(Duration.ZERO).withPermits(2);
            try (RedisInspector redisView = new RedisInspector(redis.port());
                    HolderProcess dying = HolderProcess.startPermit(redis.port(), "crash:permits", Duration.ZERO,
                            WATCHDOG, 2);
                    HolderProcess living = HolderProcess.startPermit(redis.port(), "crash:permits", Duration.ZERO,
                            WATCHDOG, 2)) {
                dying.awaitHolding(HOLDER_START);
                living.awaitHolding(HOLDER_START);
                Duration alive = WATCHDOG.multipliedBy(5).dividedBy(2);
                await().during(alive).atMost(alive.plusSeconds(3)).pollInterval(Duration.ofMillis(20))
                        .until(() -> !contender.tryRun("crash:permits", permit, () -> { }) && dying.isAlive());

                dying.kill();
                long killedAt = System.nanoTime();
                await().atMost(WATCHDOG.plusSeconds(1)).pollInterval(Duration.ofMillis(10))
                        .until(() -> contender.tryRun("crash:permits", permit, () -> assertThat(
                                redisView.zcard("distlock_permits:{lock:crash:permits}")).isEqualTo(2)));
                long freeAfterMs = (System.nanoTime() - killedAt) / 1_000_000;
                System.out.printf("MEASURED crash/permits: a killed holder's permit came back %d ms after the kill "
                        + "(watchdog timeout %d ms)%n", freeAfterMs, WATCHDOG.toMillis());
                assertThat(living.isAlive()).isTrue();
                assertThat(redisView.zcard("distlock_permits:{lock:crash:permits}")).as("the live holder's permit")
                        .isEqualTo(1);
            }
        });
    }

    /** One try without waiting; the lock is released again at once when it was free. */
    private static boolean tryOnce(LockTemplate locks, String key) {
        return locks.tryRun(key, LockOptions.waitFor(Duration.ZERO), () -> {
        });
    }
}

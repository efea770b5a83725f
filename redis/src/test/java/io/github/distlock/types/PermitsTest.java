package io.github.distlock.types;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.it.LockTestApplication;
import io.github.distlock.it.RedisIntegrationTest;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * {@code permits = N}: at most N holders of a key at once, on a real redis-server; a dead holder's permit comes back
 * within its lease.
 */
@SpringBootTest(classes = {LockTestApplication.class, PermitsTest.Exports.class},
        properties = {"spring.data.redis.timeout=10s", "distlock.watchdog-timeout=3s"})
class PermitsTest extends RedisIntegrationTest {

    @Autowired
    LockTemplate locks;

    @Autowired
    Exports exports;

    /** 16 threads, 3 permits: never a fourth holder, and the three are used (it is a semaphore, not a lock). */
    @Test
    void sixteenThreadsNeverExceedThePermits() throws Exception {
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        AtomicInteger runs = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(16);
        try {
            List<CompletableFuture<Void>> calls = new ArrayList<>();
            for (int t = 0; t < 16; t++) {
                calls.add(CompletableFuture.runAsync(() -> {
                    for (int i = 0; i < 15; i++) {
                        exports.export("tenant-7", () -> {
                            int now = inside.incrementAndGet();
                            most.accumulateAndGet(now, Math::max);
                            long members = redisCommands.zcard("distlock_permits:{lock:export:tenant-7}");
                            assertThat(members).as("permits held in Redis").isBetween(1L, 3L);
                            Thread.onSpinWait();
                            inside.decrementAndGet();
                            runs.incrementAndGet();
                        });
                    }
                }, pool));
            }
            CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        }
        finally {
            pool.shutdownNow();
        }
        assertThat(runs.get()).isEqualTo(16 * 15);
        assertThat(most.get()).as("most holders at once").isEqualTo(3);
        assertThat(redisCommands.exists("distlock_permits:{lock:export:tenant-7}")).as("the set, after the last release").isZero();
    }

    /** Each holder's permit lives with its lease in Redis's clock: the set's members and their scores. */
    @Test
    void aPermitIsAMemberWithItsExpiryAndTheSetExpiresWithTheLastOne() {
        locks.run("report", LockOptions.waitFor(Duration.ZERO).withLeaseTime(Duration.ofSeconds(20)).withPermits(2), () -> {
            assertThat(redisCommands.zcard("distlock_permits:{lock:report}")).isEqualTo(1);
            assertThat(redisCommands.pttl("distlock_permits:{lock:report}")).isBetween(18_000L, 20_001L);
            // a second holder fits, a third does not
            assertThat(locks.tryRun("report", LockOptions.waitFor(Duration.ZERO).withPermits(2), () -> {
                assertThat(locks.tryRun("report", LockOptions.waitFor(Duration.ZERO).withPermits(2), () -> { }))
                        .as("a third holder (from another thread's point of view: nested calls re-enter)").isTrue();
            })).isTrue();
        });
        assertThat(redisCommands.exists("distlock_permits:{lock:report}")).isZero();
    }

    /**
     * A holder that dies (its client shut down without a release) keeps its permit until its lease runs out, and not a
     * moment longer: then the waiter gets it — while the dead client's other permit, with a long lease, stays taken.
     */
    @Test
    void aDeadHoldersPermitComesBackWithinItsLease() throws Exception {
        Config config = new Config();
        config.useSingleServer().setAddress(redis.uri());
        RedissonClient dying = Redisson.create(config);
        long acquired;
        try (RedissonLockProvider other = new RedissonLockProvider(dying)) {
            for (Duration lease : List.of(Duration.ofSeconds(20), Duration.ofMillis(1500))) {
                LockHandle handle = other.acquire(new LockRequest("lock:jobs", 0, lease.toNanos(), false,
                        io.github.distlock.LockType.REENTRANT, LockOwner.next(), 2)).join();
                assertThat(handle).as("permit with lease " + lease).isNotNull();
            }
            acquired = System.nanoTime();
        }
        finally {
            dying.shutdown();
        }
        boolean ran = locks.tryRun("jobs", LockOptions.waitFor(Duration.ofSeconds(10)).withPermits(2), () -> {
            assertThat(redisCommands.zcard("distlock_permits:{lock:jobs}")).as("the long dead permit and this one").isEqualTo(2);
        });
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - acquired);
        assertThat(ran).isTrue();
        assertThat(waited).as("ms from the dead holder's acquisition of its 1.5 s permit to the waiter's")
                .isGreaterThanOrEqualTo(1400).isLessThan(3_500);
    }

    /** A lock and a semaphore of one key are apart: a nested call across them is refused, not re-entered. */
    @Test
    void aNestedCallWithOtherPermitsIsRefused() {
        assertThatThrownBy(() -> locks.run("mixed", LockOptions.waitFor(Duration.ZERO).withPermits(3),
                () -> locks.run("mixed", LockOptions.waitFor(Duration.ZERO), () -> { })))
                .isInstanceOf(io.github.distlock.NestedLockException.class)
                .hasMessageContaining("held with permits = 3 by an outer call on this thread; a nested call with permits = 1");
        assertThat(redisCommands.exists("distlock_permits:{lock:mixed}", "lock:mixed")).isZero();
    }

    /** Registered by {@code @SpringBootTest(classes = ...)}: a bean with an annotated method, proxied. */
    static class Exports {

        @DistributedLock(key = "'export:' + #tenant", permits = 3, waitTime = 30_000)
        public void export(String tenant, Runnable work) {
            work.run();
        }
    }
}

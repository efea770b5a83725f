package io.github.distlock.it;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.DistributedLock;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Many threads increment a plain, unsynchronized counter under one lock key. Invariant: at most one thread is ever
 * inside the critical section (overlaps == 0) and no increment is lost (counter == calls). The unlocked twin of the
 * same method shows the harness does catch both when the lock is missing.
 */
@SpringBootTest(classes = {LockTestApplication.class, MutualExclusionTest.Config.class})
class MutualExclusionTest extends RedisIntegrationTest {

    static final int THREADS = 16;
    static final int CALLS_PER_THREAD = 200;

    @Autowired
    Counter counter;

    @Test
    void oneKeyAdmitsOneHolderAtATime() throws Exception {
        hammer(counter::incrementLocked);

        assertThat(counter.overlaps()).as("calls that found another call inside").isZero();
        assertThat(counter.value()).as("increments").isEqualTo(THREADS * CALLS_PER_THREAD);
        assertThat(redisCommands.keys("lock:*")).as("locks left behind").isEmpty();
    }

    @Test
    void withoutTheLockTheSameHarnessSeesOverlapsAndLostUpdates() throws Exception {
        hammer(counter::incrementUnlocked);

        assertThat(counter.overlaps()).isPositive();
        assertThat(counter.value()).isLessThan(THREADS * CALLS_PER_THREAD);
    }

    private void hammer(Runnable call) throws Exception {
        counter.reset();
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> results = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                results.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < CALLS_PER_THREAD; i++) {
                        call.run();
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> result : results) {
                result.get(120, TimeUnit.SECONDS);
            }
        }
        finally {
            pool.shutdownNow();
        }
    }

    static class Counter {

        final AtomicInteger inside = new AtomicInteger();
        final AtomicInteger overlaps = new AtomicInteger();
        volatile int value;

        @DistributedLock(key = "'counter'", waitTime = 60, timeUnit = TimeUnit.SECONDS)
        public void incrementLocked() {
            increment();
        }

        public void incrementUnlocked() {
            increment();
        }

        private void increment() {
            if (inside.incrementAndGet() > 1) {
                overlaps.incrementAndGet();
            }
            int read = value;
            // widen the read-modify-write window so a missing lock shows within a few hundred calls
            long until = System.nanoTime() + 50_000;
            while (System.nanoTime() < until) {
                Thread.onSpinWait();
            }
            value = read + 1;
            inside.decrementAndGet();
        }

        // accessed through methods: the bean is a CGLIB proxy whose own fields are never set
        public void reset() {
            value = 0;
            overlaps.set(0);
        }

        public int overlaps() {
            return overlaps.get();
        }

        public int value() {
            return value;
        }
    }

    @TestConfiguration
    static class Config {
        @Bean
        Counter counter() {
            return new Counter();
        }
    }
}

package io.github.distlock.types;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockContext;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import io.github.distlock.it.HeldElsewhere;
import io.github.distlock.it.LockTestApplication;
import io.github.distlock.it.RedisIntegrationTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * FAIR, READ and WRITE locks against a real redis-server, through the template and the annotation.
 */
@SpringBootTest(classes = {LockTestApplication.class, LockTypesTest.Config.class},
        // a loaded 2-core CI machine can stall a reply for seconds under this stress; exclusion, not latency, is tested
        properties = "spring.data.redis.timeout=10s")
class LockTypesTest extends RedisIntegrationTest {

    private static final LockOptions FAIR = LockOptions.waitFor(Duration.ofSeconds(30)).withType(LockType.FAIR);
    private static final LockOptions READ = LockOptions.waitFor(Duration.ofSeconds(10)).withType(LockType.READ);
    private static final LockOptions WRITE = LockOptions.waitFor(Duration.ofSeconds(10)).withType(LockType.WRITE);

    @Autowired
    LockTemplate locks;

    @Autowired
    Documents documents;

    private final List<HeldElsewhere> holders = new CopyOnWriteArrayList<>();

    @AfterEach
    void releaseAll() {
        holders.forEach(HeldElsewhere::releaseLater);
        await().atMost(Duration.ofSeconds(10)).until(() -> redisCommands.keys("lock:*").isEmpty());
    }

    @Test
    void fairWaitersGetTheLockInTheOrderTheyQueued() throws Exception {
        HeldElsewhere release = hold("fair", FAIR);
        List<Integer> order = new CopyOnWriteArrayList<>();
        List<CompletableFuture<Void>> waiters = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            for (int i = 0; i < 8; i++) {
                int index = i;
                waiters.add(CompletableFuture.runAsync(() -> locks.run("fair", FAIR, () -> order.add(index)), pool));
                // the next waiter starts only once this one is in Redisson's queue: the arrival order is known
                long queued = i + 1;
                await().atMost(Duration.ofSeconds(5)).until(() -> redisCommands.hlen("distlock_waiters:{lock:fair}") == queued);
            }
            release.releaseLater();
            CompletableFuture.allOf(waiters.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
        }
        finally {
            pool.shutdownNow();
        }
        assertThat(order).containsExactly(0, 1, 2, 3, 4, 5, 6, 7);
    }

    @Test
    void readersShareAWriterExcludesEveryoneAndAWaitingWriterGetsIn() throws Exception {
        // two readers at once
        HeldElsewhere firstReader = hold("doc", READ);
        assertThat(locks.tryExecute("doc", READ.withWaitTime(Duration.ZERO), () -> "second reader").acquired()).isTrue();
        // a writer waits for the reader, and gets in once it leaves
        CompletableFuture<String> writer = CompletableFuture.supplyAsync(() -> locks.execute("doc", WRITE, () -> "wrote"));
        await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2)).until(() -> !writer.isDone());
        firstReader.releaseLater();
        assertThat(writer.get(10, TimeUnit.SECONDS)).isEqualTo("wrote");
        // a writer holds: readers and other writers are refused
        HeldElsewhere writerHolds = hold("doc", WRITE);
        assertThat(locks.tryExecute("doc", READ.withWaitTime(Duration.ZERO), () -> "read").acquired()).isFalse();
        assertThat(locks.tryExecute("doc", WRITE.withWaitTime(Duration.ZERO), () -> "write").acquired()).isFalse();
        writerHolds.releaseLater();
    }

    @Test
    void tenThousandMixedOperationsNeverLetAWriterOverlapAnyone() throws Exception {
        AtomicInteger readers = new AtomicInteger();
        AtomicInteger writers = new AtomicInteger();
        AtomicInteger maxReaders = new AtomicInteger();
        AtomicInteger violations = new AtomicInteger();
        AtomicInteger writes = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(16);
        List<CompletableFuture<Void>> threads = new ArrayList<>();
        try {
            for (int t = 0; t < 16; t++) {
                threads.add(CompletableFuture.runAsync(() -> {
                    for (int i = 0; i < 625; i++) {
                        if (ThreadLocalRandom.current().nextInt(10) < 8) {
                            locks.run("mixed", READ, () -> {
                                int now = readers.incrementAndGet();
                                maxReaders.accumulateAndGet(now, Math::max);
                                if (writers.get() != 0) {
                                    violations.incrementAndGet();
                                }
                                // long enough, against a round trip to Redis, for a wrongly admitted writer to be seen
                                spinMicros(100);
                                readers.decrementAndGet();
                            });
                        }
                        else {
                            locks.run("mixed", WRITE, () -> {
                                if (writers.incrementAndGet() != 1 || readers.get() != 0) {
                                    violations.incrementAndGet();
                                }
                                spinMicros(100);
                                if (readers.get() != 0) {
                                    violations.incrementAndGet();
                                }
                                writes.incrementAndGet();
                                writers.decrementAndGet();
                            });
                        }
                    }
                }, pool));
            }
            CompletableFuture.allOf(threads.toArray(CompletableFuture[]::new)).get(180, TimeUnit.SECONDS);
        }
        finally {
            pool.shutdownNow();
        }
        assertThat(violations).as("a writer overlapped a reader or another writer").hasValue(0);
        assertThat(maxReaders.get()).as("readers overlapped").isGreaterThan(1);
        assertThat(writes.get()).as("writers got in").isPositive();
    }

    @Test
    void fencedFairAndWriteLocksCarryRisingTokensAndReadLocksRefuseFencing() {
        long fair1 = locks.execute("f", FAIR.withFencing(), () -> LockContext.fencingToken().orElseThrow());
        long fair2 = locks.execute("f", FAIR.withFencing(), () -> LockContext.fencingToken().orElseThrow());
        long write1 = locks.execute("w", WRITE.withFencing(), () -> LockContext.fencingToken().orElseThrow());
        long write2 = locks.execute("w", WRITE.withFencing(), () -> LockContext.fencingToken().orElseThrow());

        assertThat(fair2).isGreaterThan(fair1);
        assertThat(write2).isGreaterThan(write1);
        assertThatThrownBy(() -> locks.execute("r", READ.withFencing(), () -> "never"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("cannot take fenced READ locks");
    }

    /** A nested FAIR call re-enters the hand-off lock its outer call holds (asked of Redis), fenced inside unfenced too. */
    @Test
    void nestedFairCallsReenterAndAFencedNestedCallGetsAToken() {
        long token = locks.execute("nf", FAIR, () -> {
            assertThat(redisCommands.hlen("lock:nf")).isEqualTo(1);
            return locks.execute("nf", FAIR.withFencing(), () -> locks.execute("nf", FAIR,
                    () -> LockContext.fencingToken().orElseThrow()));
        });
        assertThat(token).isPositive();
        assertThat(redisCommands.keys("lock:*")).isEmpty();
    }

    @Test
    void nestedCallsAcrossTypes() {
        // READ inside WRITE re-enters: the writer already excludes everyone
        assertThat(documents.write("n1", () -> documents.read("n1", () -> "read inside write"))).isEqualTo("read inside write");
        // an exclusive call inside READ would wait for itself: refused at once
        assertThatThrownBy(() -> documents.read("n2", () -> documents.write("n2", () -> "never")))
                .isInstanceOf(io.github.distlock.NestedLockException.class)
                .hasMessageContaining("held for READ by an outer call on this thread");
        assertThat(redisCommands.keys("lock:*")).isEmpty();
    }

    private static void spinMicros(long micros) {
        long until = System.nanoTime() + micros * 1000;
        while (System.nanoTime() < until) {
            Thread.onSpinWait();
        }
    }

    /** Holds {@code key} on a thread of its own until released (or the test ends). */
    private HeldElsewhere hold(String key, LockOptions options) {
        HeldElsewhere holder = HeldElsewhere.hold(locks, key, options);
        holders.add(holder);
        return holder;
    }

    public static class Documents {

        @DistributedLock(key = "'doc:' + #id", type = LockType.READ)
        public <T> T read(String id, java.util.function.Supplier<T> body) {
            return body.get();
        }

        @DistributedLock(key = "'doc:' + #id", type = LockType.WRITE)
        public <T> T write(String id, java.util.function.Supplier<T> body) {
            return body.get();
        }
    }

    @TestConfiguration
    static class Config {

        @Bean
        Documents documents() {
            return new Documents();
        }
    }
}

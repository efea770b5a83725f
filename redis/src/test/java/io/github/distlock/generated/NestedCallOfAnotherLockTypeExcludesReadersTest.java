package io.github.distlock.generated;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.DistributedLock;
import io.github.distlock.NestedLockException;
import io.github.distlock.LockType;
import io.github.distlock.it.LockTestApplication;
import io.github.distlock.it.RedisIntegrationTest;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * A nested {@code WRITE} call on a key its thread holds with a {@code REENTRANT} or {@code FAIR} lock excludes the key's
 * readers like any {@code WRITE} call: it is refused with an error naming the key, or it takes the write lock; it never
 * "re-enters" a lock of another kind and runs beside a reader.
 */
@SpringBootTest(classes = {LockTestApplication.class, NestedCallOfAnotherLockTypeExcludesReadersTest.Config.class})
class NestedCallOfAnotherLockTypeExcludesReadersTest extends RedisIntegrationTest {

    @Autowired
    Outer outer;

    @Autowired
    Inner inner;

    @Test
    void aNestedWriteCallInsideAReentrantHoldDoesNotRunBesideAReader() throws Exception {
        assertNestedWriteExcludesReader(() -> outer.reentrant());
    }

    @Test
    void aNestedWriteCallInsideAFairHoldDoesNotRunBesideAReader() throws Exception {
        assertNestedWriteExcludesReader(() -> outer.fair());
    }

    private void assertNestedWriteExcludesReader(Runnable outerCall) throws Exception {
        CountDownLatch reading = new CountDownLatch(1);
        CountDownLatch stopReading = new CountDownLatch(1);
        CompletableFuture<Void> reader = CompletableFuture.runAsync(() -> inner.read(reading, stopReading), command -> {
            Thread thread = new Thread(command, "reader");
            thread.setDaemon(true);
            thread.start();
        });
        assertThat(reading.await(10, TimeUnit.SECONDS)).as("a reader holds the key").isTrue();
        int writesBefore = inner.writes();
        try {
            assertThatThrownBy(outerCall::run)
                    .isInstanceOf(NestedLockException.class)
                    .hasMessageContaining("'lock:shared-key'");
            assertThat(inner.writes()).as("the nested WRITE body ran beside a reader").isEqualTo(writesBefore);
        }
        finally {
            stopReading.countDown();
            reader.get(10, TimeUnit.SECONDS);
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> redisCommands.keys("*shared-key*").isEmpty());
    }

    public static class Outer {
        private final Inner inner;

        public Outer(Inner inner) {
            this.inner = inner;
        }

        @DistributedLock(key = "'shared-key'", waitTime = 0)
        public void reentrant() {
            inner.write();
        }

        @DistributedLock(key = "'shared-key'", type = LockType.FAIR, waitTime = 0)
        public void fair() {
            inner.write();
        }
    }

    public static class Inner {
        private final AtomicInteger writes = new AtomicInteger();

        public int writes() {
            return writes.get();
        }

        @DistributedLock(key = "'shared-key'", type = LockType.WRITE, waitTime = 0)
        public void write() {
            writes.incrementAndGet();
        }

        @DistributedLock(key = "'shared-key'", type = LockType.READ, waitTime = 0)
        public void read(CountDownLatch reading, CountDownLatch stopReading) {
            reading.countDown();
            try {
                stopReading.await(30, TimeUnit.SECONDS);
            }
            catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @TestConfiguration(proxyBeanMethods = false)
    static class Config {

        @Bean
        Inner inner() {
            return new Inner();
        }

        @Bean
        Outer outer(Inner inner) {
            return new Outer(inner);
        }
    }
}

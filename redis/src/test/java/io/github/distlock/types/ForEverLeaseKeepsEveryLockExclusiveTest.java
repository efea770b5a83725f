package io.github.distlock.types;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import io.github.distlock.it.LockTestApplication;
import io.github.distlock.it.RedisIntegrationTest;
import io.github.distlock.spi.LockDurations;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code leaseTime = Long.MAX_VALUE} ("keep it until I'm done") on a real redis-server: the lock's key lives a hundred
 * years ({@link LockDurations#FOR_EVER}), not a negative {@code PEXPIRE} that deletes it at once, so no second caller
 * gets in while the method runs — for a FAIR lock through the annotation, and for every exclusive type through the
 * template.
 */
@SpringBootTest(classes = {LockTestApplication.class, ForEverLeaseKeepsEveryLockExclusiveTest.Config.class})
class ForEverLeaseKeepsEveryLockExclusiveTest extends RedisIntegrationTest {

    /** Within a minute of a hundred years, in milliseconds: the key's PTTL right after the grant. */
    private static final long FOR_EVER_MILLIS = LockDurations.FOR_EVER.toMillis();

    @Autowired
    LockTemplate locks;

    @Autowired
    Jobs jobs;

    /** Reached through its proxy: the latches only through methods, as a proxy's own fields are not the bean's. */
    static class Jobs {
        private final CountDownLatch inside = new CountDownLatch(1);
        private final CountDownLatch finish = new CountDownLatch(1);

        public boolean awaitInside() throws InterruptedException {
            return inside.await(10, TimeUnit.SECONDS);
        }

        public void finish() {
            finish.countDown();
        }

        @DistributedLock(key = "'fair-for-ever'", type = LockType.FAIR, leaseTime = Long.MAX_VALUE,
                timeUnit = TimeUnit.DAYS)
        public void untilDone() throws InterruptedException {
            inside.countDown();
            finish.await(30, TimeUnit.SECONDS);
        }
    }

    @TestConfiguration
    static class Config {
        @Bean
        Jobs jobs() {
            return new Jobs();
        }
    }

    @Test
    void aFairLockWithALeaseOfLongMaxValueDaysKeepsASecondCallerOut() throws Exception {
        CompletableFuture<Void> holder = CompletableFuture.runAsync(() -> {
            try {
                jobs.untilDone();
            }
            catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        });
        assertThat(jobs.awaitInside()).as("the method runs").isTrue();
        assertThat(redisCommands.pttl("lock:fair-for-ever")).as("the FAIR lock's time to live, ms")
                .isBetween(FOR_EVER_MILLIS - 60_000, FOR_EVER_MILLIS);
        assertThat(locks.tryExecute("fair-for-ever", LockOptions.waitFor(Duration.ZERO).withType(LockType.FAIR),
                () -> true).acquired()).as("a second FAIR caller while the first runs").isFalse();
        jobs.finish();
        holder.get(10, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(5)).until(() -> redisCommands.exists("lock:fair-for-ever") == 0);
        assertThat(locks.tryExecute("fair-for-ever", LockOptions.waitFor(Duration.ZERO).withType(LockType.FAIR),
                () -> true).acquired()).as("the next caller, once the method returned").isTrue();
    }

    @Test
    void theLargestDurationAsLeaseKeepsASecondCallerOutForEveryExclusiveType() throws Exception {
        Duration largest = Duration.ofSeconds(Long.MAX_VALUE, 999_999_999);
        for (LockType type : new LockType[] {LockType.REENTRANT, LockType.FAIR, LockType.WRITE}) {
            String key = "largest-" + type;
            LockOptions options = new LockOptions(Duration.ZERO, largest, false, type, null);
            // the second caller on a thread of its own: on the holder's thread it would be a nested call
            Boolean secondGotIn = locks.execute(key, options, () -> CompletableFuture.supplyAsync(() -> locks.tryExecute(
                    key, LockOptions.waitFor(Duration.ZERO).withType(type), () -> true).acquired()).get(10, TimeUnit.SECONDS));
            assertThat(secondGotIn).as("a second %s caller beside a lease of the largest Duration", type).isFalse();
        }
    }
}

package io.github.distlock.generated;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockAcquisitionException;
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
 * "Keep it until I'm done" written as the largest lease an annotation can say: the lock excludes a second caller for
 * as long as the first holds it, and an accepted lease never fails the call. Shrunk from the generated calls
 * ({@link AnnotatedCallsFollowTheModelTest}, seed 5): case #3 CONTENDED fairForever saw two holders at once, case #20
 * FREE permitsForever failed with {@code ArithmeticException: long overflow}; from the generated annotations (seed
 * 20261127, gen.Locked4) the same overflow for the largest wait string.
 */
@SpringBootTest(classes = {LockTestApplication.class, ForeverLeasesThroughTheAnnotationTest.Config.class})
class ForeverLeasesThroughTheAnnotationTest extends RedisIntegrationTest {

    @Autowired
    Forever forever;

    @Test
    void aFairLockLeasedForLongMaxValueMillisecondsKeepsASecondCallerOut() throws Exception {
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch leave = new CountDownLatch(1);
        CompletableFuture<Void> first = CompletableFuture.runAsync(() -> forever.fair(inside, leave), command -> {
            Thread thread = new Thread(command, "first-holder");
            thread.setDaemon(true);
            thread.start();
        });
        assertThat(inside.await(10, TimeUnit.SECONDS)).as("the first caller holds the lock").isTrue();
        try {
            assertThatThrownBy(() -> forever.fair(new CountDownLatch(1), new CountDownLatch(0)))
                    .isInstanceOf(LockAcquisitionException.class)
                    .hasMessageContaining("'lock:fair-forever'");
        }
        finally {
            leave.countDown();
            first.get(10, TimeUnit.SECONDS);
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> redisCommands.keys("*fair-forever*").stream()
                .allMatch(key -> key.startsWith("redisson_lock_token")));
    }

    @Test
    void theLargestDurationStringsAcceptedAtStartupWorkAtTheCall() {
        assertThat(forever.largestLeaseString()).isEqualTo("ran");
        assertThat(forever.largestLeaseStringWithPermits()).isEqualTo("ran");
        assertThat(forever.largestWaitString()).isEqualTo("ran");
        await().atMost(Duration.ofSeconds(10)).until(() -> redisCommands.keys("*forever-string*").isEmpty());
    }

    public static class Forever {

        @DistributedLock(key = "'fair-forever'", type = LockType.FAIR, waitTime = 0, leaseTime = Long.MAX_VALUE)
        public void fair(CountDownLatch inside, CountDownLatch leave) {
            inside.countDown();
            try {
                leave.await(30, TimeUnit.SECONDS);
            }
            catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }

        /** About 292 471 208 677 years: the largest {@code Duration} a lease string can reach in whole hours. */
        @DistributedLock(key = "'forever-string'", waitTime = 0, leaseTimeString = "PT2562047788015215H")
        public String largestLeaseString() {
            return "ran";
        }

        @DistributedLock(key = "'forever-string-wait'", waitTimeString = "PT2562047788015215H")
        public String largestWaitString() {
            return "ran";
        }

        @DistributedLock(key = "'forever-string-permits'", waitTime = 0, permits = 2,
                leaseTimeString = "PT2562047788015215H")
        public String largestLeaseStringWithPermits() {
            return "ran";
        }
    }

    @TestConfiguration(proxyBeanMethods = false)
    static class Config {

        @Bean
        Forever forever() {
            return new Forever();
        }
    }
}

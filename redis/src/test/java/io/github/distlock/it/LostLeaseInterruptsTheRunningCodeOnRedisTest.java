package io.github.distlock.it;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LeaseLostPolicy;
import io.github.distlock.LockEvent;
import io.github.distlock.LockLeaseLostException;
import io.github.distlock.LockListener;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A watchdog lock whose Redis stalls ({@code kill -STOP}) while its code runs: the lease monitor reports it lost after
 * a watchdog timeout without a confirmation, and {@link LeaseLostPolicy#INTERRUPT} stops the code within a third of
 * that timeout (the renewal period) of the report.
 */
@SpringBootTest(classes = {LockTestApplication.class, LostLeaseInterruptsTheRunningCodeOnRedisTest.Config.class},
        properties = {"distlock.watchdog-timeout=1500ms", "spring.data.redis.timeout=300ms"})
class LostLeaseInterruptsTheRunningCodeOnRedisTest extends RedisIntegrationTest {

    @Autowired
    LockTemplate locks;

    @Autowired
    LossClock lossClock;

    @AfterEach
    void resume() {
        TimedOutCallsOnAStalledRedisLeaveNoLockBehindTest.signal("CONT");
    }

    @Test
    void aStalledRedisInterruptsTheCodeWithinTheRenewalPeriodOfTheReportedLoss() throws Exception {
        CountDownLatch held = new CountDownLatch(1);
        CompletableFuture<Long> stoppedAt = new CompletableFuture<>();
        CompletableFuture<Object> call = CompletableFuture.supplyAsync(() -> {
            try {
                return locks.execute("stalled", LockOptions.DEFAULTS.withLeaseLostPolicy(LeaseLostPolicy.INTERRUPT),
                        () -> {
                            held.countDown();
                            try {
                                return new CountDownLatch(1).await(30, TimeUnit.SECONDS);
                            }
                            catch (InterruptedException ex) {
                                stoppedAt.complete(System.nanoTime());
                                throw ex;
                            }
                        });
            }
            catch (InterruptedException ex) {
                throw new java.util.concurrent.CompletionException(ex);
            }
        });
        assertThat(held.await(5, TimeUnit.SECONDS)).isTrue();

        TimedOutCallsOnAStalledRedisLeaveNoLockBehindTest.signal("STOP");
        long stopped;
        try {
            stopped = stoppedAt.get(10, TimeUnit.SECONDS);
        }
        finally {
            TimedOutCallsOnAStalledRedisLeaveNoLockBehindTest.signal("CONT");
        }

        assertThat(lossClock.reportedAt.isDone()).as("reported lost").isTrue();
        assertThat(Duration.ofNanos(stopped - lossClock.reportedAt.getNow(0L)))
                .as("from the report to the code's stop").isLessThan(Duration.ofMillis(500));
        assertThat(call).failsWithin(Duration.ofSeconds(10)).withThrowableThat().havingCause()
                .isInstanceOf(LockLeaseLostException.class)
                .withMessageStartingWith("Lock 'lock:stalled' was lost while its code ran")
                .withCauseInstanceOf(InterruptedException.class);
    }

    /** When the first loss was reported. */
    static class LossClock implements LockListener {

        final CompletableFuture<Long> reportedAt = new CompletableFuture<>();

        @Override
        public void onLeaseLost(LockEvent event) {
            reportedAt.complete(System.nanoTime());
        }
    }

    @TestConfiguration
    static class Config {

        @Bean
        LossClock lossClock() {
            return new LossClock();
        }
    }
}

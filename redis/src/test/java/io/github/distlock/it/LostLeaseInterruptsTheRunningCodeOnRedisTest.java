package io.github.distlock.it;

import java.time.Duration;

import io.github.distlock.LeaseLostPolicy;
import io.github.distlock.LockTemplate;
import io.github.distlock.test.InterruptOnLeaseLossCheck;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

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
    InterruptOnLeaseLossCheck.LossClock lossClock;

    @AfterEach
    void resume() {
        TimedOutCallsOnAStalledRedisLeaveNoLockBehindTest.signal("CONT");
    }

    @Test
    void aStalledRedisInterruptsTheCodeWithinTheRenewalPeriodOfTheReportedLoss() throws Exception {
        InterruptOnLeaseLossCheck.on(locks, lossClock).run("stalled", Duration.ofMillis(500),
                () -> TimedOutCallsOnAStalledRedisLeaveNoLockBehindTest.signal("STOP"),
                () -> TimedOutCallsOnAStalledRedisLeaveNoLockBehindTest.signal("CONT"));
    }

    @TestConfiguration
    static class Config {

        @Bean
        InterruptOnLeaseLossCheck.LossClock lossClock() {
            return new InterruptOnLeaseLossCheck.LossClock();
        }
    }
}

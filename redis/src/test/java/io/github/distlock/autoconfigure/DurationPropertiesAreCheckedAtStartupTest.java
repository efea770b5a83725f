package io.github.distlock.autoconfigure;

import java.time.Duration;

import io.github.distlock.redisson.autoconfigure.DistlockRedisProperties;
import io.github.distlock.spi.LockDurations;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every {@code distlock.*} duration either works as documented (more than 100 years is taken as
 * {@link LockDurations#FOR_EVER}) or fails the startup naming the property: never an {@link ArithmeticException}
 * without a name, and never a value the startup takes that makes every later call fail.
 */
class DurationPropertiesAreCheckedAtStartupTest {

    /** The largest number of seconds a property can say. */
    private static final String LARGEST = Long.MAX_VALUE + "s";

    private final ApplicationContextRunner runner = new ApplicationContextRunner().withUserConfiguration(Bound.class);

    @Configuration(proxyBeanMethods = false)
    @EnableConfigurationProperties({DistlockProperties.class, DistlockRedisProperties.class})
    static class Bound {
    }

    @Test
    void theLongestWaitLeaseAndHealthTimesAreForEver() {
        runner.withPropertyValues("distlock.wait-time=" + LARGEST, "distlock.lease-time=" + LARGEST,
                "distlock.health.timeout=" + LARGEST, "distlock.health.recent-lease-losses=" + LARGEST).run(context -> {
                    assertThat(context).hasNotFailed();
                    DistlockProperties properties = context.getBean(DistlockProperties.class);
                    assertThat(properties.getWaitTime()).isEqualTo(LockDurations.FOR_EVER);
                    assertThat(properties.getLeaseTime()).isEqualTo(LockDurations.FOR_EVER);
                    assertThat(properties.getHealth().getTimeout()).isEqualTo(LockDurations.FOR_EVER);
                    assertThat(properties.getHealth().getRecentLeaseLosses()).isEqualTo(LockDurations.FOR_EVER);
                });
    }

    @Test
    void aWatchdogTimeoutBeyondOneDayFailsTheStartupNamingTheProperty() {
        runner.withPropertyValues("distlock.watchdog-timeout=" + LARGEST).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause().isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("distlock.watchdog-timeout must be between PT0.1S and PT24H, was "
                            + Duration.ofSeconds(Long.MAX_VALUE));
        });
        runner.withPropertyValues("distlock.watchdog-timeout=1d").run(context -> assertThat(context).hasNotFailed());
    }

    @Test
    void aRetryDelayBeyondTenMinutesFailsTheStartupNamingTheProperty() {
        runner.withPropertyValues("distlock.redis.retry-delay=" + LARGEST).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause().isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("distlock.redis.retry-delay must be between PT0S and PT10M, was ");
        });
    }

    @Test
    void aHealthTimeoutOfZeroFailsTheStartupNamingTheProperty() {
        runner.withPropertyValues("distlock.health.timeout=0s").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause().isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("distlock.health.timeout must be at least 1 ms, was PT0S");
        });
    }
}

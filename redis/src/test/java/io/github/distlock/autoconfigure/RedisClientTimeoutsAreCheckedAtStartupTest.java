package io.github.distlock.autoconfigure;

import io.github.distlock.redisson.autoconfigure.DistlockRedissonAutoConfiguration;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Redis client timeouts distlock hands to Redisson ({@code spring.data.redis.timeout} and
 * {@code connect-timeout}) either work or fail the startup naming the property, as every duration a backend takes
 * must: never an {@link ArithmeticException} without a name, never a value taken at startup that makes every
 * later lock call fail.
 */
class RedisClientTimeoutsAreCheckedAtStartupTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class,
                    DistlockRedissonAutoConfiguration.class, DistlockAutoConfiguration.class))
            .withPropertyValues("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + redis.port());

    @Test
    void aRedisTimeoutLongerThanAnIntOfMillisFailsTheStartupNamingTheProperty() {
        runner.withPropertyValues("spring.data.redis.timeout=30d").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).hasStackTraceContaining("spring.data.redis.timeout");
        });
    }

    @Test
    void aRedisConnectTimeoutLongerThanAnIntOfMillisFailsTheStartupNamingTheProperty() {
        runner.withPropertyValues("spring.data.redis.connect-timeout=30d").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).hasStackTraceContaining("spring.data.redis.connect-timeout");
        });
    }
}

package io.github.distlock.generated;

import io.github.distlock.DistributedLock;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.redisson.autoconfigure.DistlockRedissonAutoConfiguration;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A negative minimum hold is refused at startup, naming the method, like a negative wait or lease: {@code -1} is
 * {@link DistributedLock#DEFAULT} only for {@code waitTime} and {@code leaseTime}. Shrunk from the generated
 * annotations (seed 7, gen.Locked144 and two more), where {@code holdAtLeast = -1} started and ran as "no hold".
 */
class NegativeMinimumHoldFailsTheStartupTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    @Test
    void holdAtLeastOfMinusOneFailsTheStartupNamingTheMethod() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class, AopAutoConfiguration.class,
                        DistlockRedissonAutoConfiguration.class, DistlockAutoConfiguration.class))
                .withPropertyValues("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + redis.port())
                .withBean(Job.class)
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure())
                            .hasStackTraceContaining("Invalid @DistributedLock on " + Job.class.getName() + ".run()")
                            .hasStackTraceContaining("holdAtLeast must be >= 0");
                });
    }

    static class Job {

        @DistributedLock(key = "'nightly'", holdAtLeast = -1)
        public void run() {
        }
    }
}

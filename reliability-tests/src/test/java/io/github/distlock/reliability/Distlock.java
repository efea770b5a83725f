package io.github.distlock.reliability;

import java.time.Duration;

import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.redisson.autoconfigure.DistlockRedissonAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The starter as an application gets it: Spring Boot's Redis settings, the Redisson client distlock builds from them,
 * the lock template and the {@code @DistributedLock} advisor.
 */
final class Distlock {

    private Distlock() {
    }

    /** An application talking to Redis on {@code port} with the given watchdog timeout. */
    static ApplicationContextRunner app(int port, Duration watchdogTimeout) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class, AopAutoConfiguration.class,
                        DistlockRedissonAutoConfiguration.class, DistlockAutoConfiguration.class))
                .withPropertyValues("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + port,
                        "distlock.watchdog-timeout=" + watchdogTimeout.toMillis() + "ms");
    }
}

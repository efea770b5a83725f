package io.github.distlock.topology;

import java.time.Duration;

import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.redisson.autoconfigure.DistlockRedissonAutoConfiguration;
import io.github.distlock.testsupport.RedisCluster;
import io.github.distlock.testsupport.RedisSentinelSetup;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The starter as an application gets it, configured the Spring Boot way and in no other: only
 * {@code spring.data.redis.cluster.nodes}, or only {@code spring.data.redis.sentinel.master/nodes}. Whatever distlock
 * does on these topologies it must do from these properties alone, since that is all a user writes.
 */
final class Apps {

    private Apps() {
    }

    /** An application whose only Redis setting is the cluster's node list. */
    static ApplicationContextRunner cluster(RedisCluster cluster, Duration watchdogTimeout) {
        return base(watchdogTimeout)
                .withPropertyValues("spring.data.redis.cluster.nodes=" + String.join(",", cluster.nodeAddresses()));
    }

    /** An application whose only Redis settings are the sentinels and the name of the master they watch. */
    static ApplicationContextRunner sentinel(RedisSentinelSetup redis, Duration watchdogTimeout) {
        return base(watchdogTimeout)
                .withPropertyValues("spring.data.redis.sentinel.master=" + redis.masterName(),
                        "spring.data.redis.sentinel.nodes=" + String.join(",", redis.sentinelAddresses()));
    }

    private static ApplicationContextRunner base(Duration watchdogTimeout) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class, AopAutoConfiguration.class,
                        DistlockRedissonAutoConfiguration.class, DistlockAutoConfiguration.class))
                .withPropertyValues("distlock.watchdog-timeout=" + watchdogTimeout.toMillis() + "ms");
    }
}

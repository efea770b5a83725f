package io.github.distlock.redisson.autoconfigure;

import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.DistlockConfigurationException;
import io.github.distlock.autoconfigure.ConditionalOnDistlockBackend;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.autoconfigure.DistlockBackend;
import io.github.distlock.autoconfigure.DistlockProperties;
import org.redisson.Redisson;
import org.redisson.client.RedisConnectionException;
import org.redisson.api.RedissonClient;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.boot.data.redis.autoconfigure.DataRedisProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The Redisson lock backend: the application's own {@link RedissonClient} bean if it has one (or Redisson's starter
 * made one), otherwise a client built from Spring Boot's {@code spring.data.redis.*} connection settings.
 */
@AutoConfiguration(after = DataRedisAutoConfiguration.class, before = DistlockAutoConfiguration.class,
        afterName = "org.redisson.spring.starter.RedissonAutoConfigurationV4")
@ConditionalOnClass(RedissonClient.class)
@ConditionalOnProperty(prefix = "distlock", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties({DistlockProperties.class, DistlockRedisProperties.class})
public final class DistlockRedissonAutoConfiguration {

    /** Registered before the lock provider below (member classes are processed first), so its condition sees it. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(DataRedisConnectionDetails.class)
    @ConditionalOnBean(DataRedisConnectionDetails.class)
    @ConditionalOnMissingBean({RedissonClient.class, LockProvider.class})
    // no client when the application brings its own LockProvider (or a test its in-memory one): it would lock nothing;
    // a Redisson client for a backend that another distlock.backend excludes would only connect to nothing
    @ConditionalOnDistlockBackend("redis")
    @EnableConfigurationProperties(DataRedisProperties.class)
    static class RedissonClientConfiguration {

        @Bean(destroyMethod = "shutdown")
        RedissonClient distlockRedissonClient(DataRedisConnectionDetails details, DataRedisProperties redisProperties,
                DistlockProperties properties, DistlockRedisProperties redis,
                ObjectProvider<RedissonConfigCustomizer> customizers) {
            RedissonConfigFactory.RedissonSettings settings = RedissonConfigFactory.create(details, redisProperties,
                    properties, redis);
            customizers.orderedStream().forEach(customizer -> {
                customizer.customize(settings.config());
                customizer.customizeServer(settings.server());
            });
            try {
                RedissonClient client = Redisson.create(settings.config());
                if (settings.config().isLazyInitialization()) {
                    // connect now, in the background: the first lock calls then find a warm pool instead of waiting
                    // together for connections to open; if Redis is down, the first call that needs it tries again
                    Thread warmUp = new Thread(() -> {
                        try {
                            client.getKeys().countAsync();
                        }
                        catch (RuntimeException ignored) {
                            // Redis not reachable yet: nothing to warm
                        }
                    }, "distlock-redis-warm-up");
                    warmUp.setDaemon(true);
                    warmUp.start();
                }
                return client;
            }
            catch (RedisConnectionException ex) {
                // only when distlock.redis.require-at-startup=true: otherwise the client connects on first use
                throw new DistlockConfigurationException("distlock could not reach Redis at startup, and "
                        + "distlock.redis.require-at-startup=true requires it: " + ex.getMessage(),
                        "Start Redis or correct spring.data.redis.* (host, port, sentinel or cluster nodes); or set "
                        + "distlock.redis.require-at-startup=false to start anyway: lock calls then fail with "
                        + "LockBackendException until Redis is reachable.", ex);
            }
        }
    }

    @Bean
    @ConditionalOnBean(RedissonClient.class)
    @ConditionalOnMissingBean(LockProvider.class)
    @ConditionalOnDistlockBackend("redis")
    DistlockBackend redisLockBackend(ObjectProvider<RedissonClient> redisson, ListableBeanFactory beanFactory) {
        String[] names = beanFactory.getBeanNamesForType(RedissonClient.class, true, false);
        String description = (names.length == 1 && names[0].equals("distlockRedissonClient"))
                ? "spring.data.redis.* (Spring Boot's Redis connection settings, localhost:6379 when none are set)"
                : "RedissonClient bean '" + String.join("', '", names) + "'";
        return new DistlockBackend("redis", description, () -> new RedissonLockProvider(redisson.getObject()));
    }
}

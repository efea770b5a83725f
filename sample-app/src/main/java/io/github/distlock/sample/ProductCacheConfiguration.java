package io.github.distlock.sample;

import java.time.Duration;

import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.cache.annotation.EnableCaching;
import org.springframework.cache.concurrent.ConcurrentMapCacheManager;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.cache.RedisCacheConfiguration;
import org.springframework.data.redis.cache.RedisCacheManager;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * The shop's cache. With its locks on Redis (the default) the cache is on the same Redis, shared by every instance,
 * and {@code distlock.cache.single-flight.enabled=true} makes a missing entry load once across them all. With its
 * locks elsewhere (the "jdbc" profile, ZooKeeper, etcd) no Redis is there: each instance keeps its own cache in memory,
 * and still loads an entry once per instance.
 */
@Configuration(proxyBeanMethods = false)
@EnableCaching
public class ProductCacheConfiguration {

    /** The cache of {@link ProductCatalog#details}. */
    public static final String PRODUCT_DETAILS = "product-details";

    @Bean
    @ConditionalOnProperty(name = "distlock.backend", havingValue = "redis")
    RedisCacheManager cacheManager(RedisConnectionFactory connectionFactory) {
        return RedisCacheManager.builder(connectionFactory)
                .cacheDefaults(RedisCacheConfiguration.defaultCacheConfig().entryTtl(Duration.ofMinutes(10)))
                .build();
    }

    @Bean
    @ConditionalOnExpression("'${distlock.backend:}' != 'redis'")
    ConcurrentMapCacheManager localCacheManager() {
        return new ConcurrentMapCacheManager();
    }
}

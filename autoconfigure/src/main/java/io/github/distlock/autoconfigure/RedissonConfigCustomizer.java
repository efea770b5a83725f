package io.github.distlock.autoconfigure;

import org.redisson.config.Config;

/**
 * Adjusts the Redisson {@link Config} distlock builds from {@code spring.data.redis.*} before the client is created
 * (thread counts, codec, retry policy...). Declare beans of this type; they run in {@code @Order}.
 */
@FunctionalInterface
public interface RedissonConfigCustomizer {

    /** Changes {@code config} in place. */
    void customize(Config config);
}

package io.github.distlock.redisson.autoconfigure;

import java.util.function.Consumer;

import org.redisson.config.BaseConfig;
import org.redisson.config.Config;

/**
 * Adjusts the Redisson {@link Config} distlock builds from {@code spring.data.redis.*} before the client is created.
 * Declare beans of this type; they run in {@code @Order}.
 *
 * <pre>{@code
 * @Bean
 * RedissonConfigCustomizer nettyThreads() {
 *     return config -> config.setNettyThreads(16);
 * }
 *
 * @Bean
 * RedissonConfigCustomizer failFast() {
 *     // per-server settings (retries, pool sizes, timeouts) of whichever mode spring.data.redis selected
 *     return RedissonConfigCustomizer.server(server -> server.setRetryAttempts(1));
 * }
 * }</pre>
 */
@FunctionalInterface
public interface RedissonConfigCustomizer {

    /** Changes {@code config} in place. */
    void customize(Config config);

    /**
     * Changes the settings of the server mode distlock chose (single, sentinel, cluster or replicated), which Redisson
     * keeps out of reach of {@link Config}'s public API. Called after {@link #customize(Config)}.
     */
    default void customizeServer(BaseConfig<?> server) {
    }

    /** A customizer of the server mode's settings only. */
    static RedissonConfigCustomizer server(Consumer<BaseConfig<?>> customizer) {
        return new RedissonConfigCustomizer() {
            @Override
            public void customize(Config config) {
            }

            @Override
            public void customizeServer(BaseConfig<?> server) {
                customizer.accept(server);
            }
        };
    }
}

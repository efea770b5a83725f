package io.github.distlock.benchmarks;

import io.github.distlock.autoconfigure.RedissonConfigCustomizer;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * The application the benchmarks run: distlock's auto-configuration on a real Redis, one {@link LockedService}.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class BenchApplication {

    /** The annotated bean; Spring proxies it. */
    @Bean
    LockedService lockedService() {
        return new LockedService();
    }

    /** Applies the {@code bench.redisson-config} variant, so the same code measures each candidate default. */
    @Bean
    RedissonConfigCustomizer benchRedissonConfig(Environment environment) {
        RedissonVariant variant = RedissonVariant.valueOf(
                environment.getProperty("bench.redisson-config", "DEFAULT").toUpperCase(java.util.Locale.ROOT));
        return variant::apply;
    }

    /**
     * Starts the application against the Redis on {@code port}.
     *
     * @param variant the Redisson {@code Config} variant to apply on top of what distlock builds
     */
    public static ConfigurableApplicationContext start(int port, RedissonVariant variant) {
        return new SpringApplicationBuilder(BenchApplication.class)
                .web(WebApplicationType.NONE)
                .logStartupInfo(false)
                .properties(
                        "spring.main.banner-mode=off",
                        "spring.data.redis.host=127.0.0.1",
                        "spring.data.redis.port=" + port,
                        // Redisson logs every connection at INFO; keep the benchmark output readable
                        "logging.level.root=WARN",
                        "bench.redisson-config=" + variant.name())
                .run();
    }
}

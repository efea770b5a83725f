package io.github.distlock.benchmarks;

import java.util.Arrays;

import io.github.distlock.redisson.autoconfigure.RedissonConfigCustomizer;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * The application the benchmarks run: distlock's auto-configuration on a real Redis (or, given a
 * {@code spring.datasource.url} and {@code distlock.backend=jdbc}, on a database), one {@link LockedService}.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class BenchApplication {

    /** Excluded from the applications that have no database (see {@link #start(RedissonVariant, String...)}). */
    static final String DATA_SOURCE_AUTO_CONFIGURATION =
            "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration";

    /** The annotated bean; Spring proxies it. */
    @Bean
    LockedService lockedService() {
        return new LockedService();
    }

    /**
     * Applies the {@code bench.redisson-config} variant, so the same code measures each candidate default, and
     * {@code bench.check-lock-synced-slaves} when set (Redisson's default, {@code true}, otherwise).
     */
    @Bean
    RedissonConfigCustomizer benchRedissonConfig(Environment environment) {
        RedissonVariant variant = RedissonVariant.valueOf(
                environment.getProperty("bench.redisson-config", "DEFAULT").toUpperCase(java.util.Locale.ROOT));
        Boolean checkSyncedSlaves = environment.getProperty("bench.check-lock-synced-slaves", Boolean.class);
        return config -> {
            variant.apply(config);
            if (checkSyncedSlaves != null) {
                config.setCheckLockSyncedSlaves(checkSyncedSlaves);
            }
        };
    }

    /**
     * Starts the application against the Redis on {@code port}.
     *
     * @param variant the Redisson {@code Config} variant to apply on top of what distlock builds
     */
    public static ConfigurableApplicationContext start(int port, RedissonVariant variant) {
        return start(variant, "spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + port);
    }

    /**
     * Starts the application with the given connection properties ({@code spring.data.redis.cluster.nodes=...} for a
     * cluster, {@code spring.datasource.*} for a database) and any {@code bench.*} settings.
     *
     * @param variant the Redisson {@code Config} variant to apply on top of what distlock builds
     * @param properties {@code name=value} pairs
     */
    public static ConfigurableApplicationContext start(RedissonVariant variant, String... properties) {
        SpringApplicationBuilder builder = new SpringApplicationBuilder(BenchApplication.class)
                .web(WebApplicationType.NONE)
                .logStartupInfo(false)
                .properties(
                        "spring.main.banner-mode=off",
                        // Redisson logs every connection at INFO; keep the benchmark output readable
                        "logging.level.root=WARN",
                        "bench.redisson-config=" + variant.name());
        if (Arrays.stream(properties).noneMatch(p -> p.startsWith("spring.datasource.url="))) {
            // HikariCP is on the class path for BackendComparison's database application; without a URL Boot's
            // DataSource auto-configuration would fail the start of every Redis-only application
            builder.properties("spring.autoconfigure.exclude=" + DATA_SOURCE_AUTO_CONFIGURATION);
        }
        return builder.properties(properties).run();
    }
}

package io.github.distlock.idempotency;

import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * "An idempotent call must finish before it returns (its mark is written then), so asynchronous results are not
 * supported": a method whose result is work still to be done (a {@link Callable}, as a Spring MVC controller returns
 * for asynchronous processing) would be marked done before that work runs, and the retry of work that then failed
 * would be refused as a duplicate. So such a method fails the startup naming it, as one returning a {@code Future}
 * does: no mark is ever stored for work that never ran. On a real redis-server, through a Spring Boot application.
 */
class IdempotentWorkFinishesBeforeItIsMarkedTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    @Test
    void aCallableWhoseWorkMayFailFailsTheStartupSoItsRetryIsNeverRefused() {
        AtomicReference<ConfigurableApplicationContext> started = new AtomicReference<>();
        try {
            assertThatThrownBy(() -> started.set(new SpringApplicationBuilder(ExportApplication.class)
                    .web(WebApplicationType.NONE)
                    .properties("redis.uri=" + redis.uri(), "spring.main.banner-mode=off").run()))
                    .hasStackTraceContaining("Invalid @Idempotent on " + Exports.class.getName() + ".export(): the "
                            + "method returns java.util.concurrent.Callable, work that runs after the method returned");
        }
        finally {
            if (started.get() != null) {
                started.get().close();
            }
        }
    }

    /** Exports whose work runs after the method returned, when the caller calls the returned task. */
    static class Exports {

        final Map<String, Boolean> failNext = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();

        /** The next run of the work of {@code id} fails (a method: the bean is a proxy). */
        public void failNext(String id) {
            failNext.put(id, true);
        }

        @Idempotent(key = "'export:' + #id")
        public Callable<String> export(String id) {
            return () -> {
                int run = runs.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
                if (Boolean.TRUE.equals(failNext.remove(id))) {
                    throw new IllegalStateException("export " + id + " failed");
                }
                return "exported " + id + " on run " + run;
            };
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class ExportApplication {

        @Bean(destroyMethod = "shutdown")
        RedissonClient redissonClient(org.springframework.core.env.Environment environment) {
            Config config = new Config();
            config.useSingleServer().setAddress(environment.getRequiredProperty("redis.uri"));
            return Redisson.create(config);
        }

        @Bean
        Exports exports() {
            return new Exports();
        }
    }
}

package io.github.distlock.idempotent;

import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
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

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * "An idempotent call must finish before it returns (its mark is written then), so asynchronous results are not
 * supported": a method whose result is work still to be done (a {@link Callable}, as a Spring MVC controller returns
 * for asynchronous processing) is marked done before that work runs. When the work then fails, its retry must run it
 * (or such a method must fail the startup, as one returning a {@code Future} does), not be refused as a duplicate.
 * On a real redis-server, through a Spring Boot application context.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class IdempotentWorkFinishesBeforeItIsMarkedTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private ConfigurableApplicationContext context;

    @BeforeAll
    void start() {
        context = new SpringApplicationBuilder(ExportApplication.class).web(WebApplicationType.NONE)
                .properties("redis.uri=" + redis.uri(), "spring.main.banner-mode=off").run();
    }

    @AfterAll
    void stop() {
        if (context != null) {
            context.close();
        }
    }

    @Test
    void aCallableWhoseWorkFailedIsRunAgainByItsRetry() throws Exception {
        Exports exports = context.getBean(Exports.class);
        String id = "x-" + UUID.randomUUID();
        exports.failNext(id);
        Callable<String> first = exports.export(id);
        assertThatThrownBy(first::call).isInstanceOf(IllegalStateException.class)
                .hasMessage("export " + id + " failed");

        // the client retries the failed export: the work has never succeeded, so it must run now
        Callable<String> retry = exports.export(id);
        assertThat(retry.call()).isEqualTo("exported " + id + " on run 2");
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

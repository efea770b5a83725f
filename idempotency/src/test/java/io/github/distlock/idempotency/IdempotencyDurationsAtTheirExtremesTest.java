package io.github.distlock.idempotency;

import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

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

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every duration users write either works as documented or fails the startup naming the property or method;
 * the lock path saturates "for ever" ({@code Long.MAX_VALUE} seconds, the largest {@code Duration}) at a hundred
 * years. {@code @Idempotent}'s durations ({@code distlock.idempotency.ttl}, {@code wait-time}, the annotation's
 * {@code ttl}) go to the same lock and to Redis, on a real redis-server.
 */
class IdempotencyDurationsAtTheirExtremesTest {

    /** The largest number of seconds a property can say: what the lock's properties take as FOR_EVER. */
    private static final String LARGEST = Long.MAX_VALUE + "s";

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private static ConfigurableApplicationContext start(String... properties) {
        String[] all = new String[properties.length + 1];
        all[0] = "spring.main.banner-mode=off";
        System.arraycopy(properties, 0, all, 1, properties.length);
        return new SpringApplicationBuilder(App.class).web(WebApplicationType.NONE).properties(all).run();
    }

    /** A mark kept "for ever" must still be a mark: the duplicate gets the result and the payment is not made twice. */
    @Test
    void aMarkKeptForEverByTheDefaultTtlStillAnswersTheDuplicate() {
        try (ConfigurableApplicationContext context = start("distlock.idempotency.ttl=" + LARGEST)) {
            Payments payments = context.getBean(Payments.class);
            String id = UUID.randomUUID().toString();
            String first = payments.pay(id);
            String duplicate = payments.pay(id);
            assertThat(payments.runs(id)).as("charges made for one payment id").isEqualTo(1);
            assertThat(duplicate).isEqualTo(first);
        }
    }

    @Test
    void aMarkKeptForEverByTheAnnotationsTtlStillAnswersTheDuplicate() {
        try (ConfigurableApplicationContext context = start()) {
            Payments payments = context.getBean(Payments.class);
            String id = UUID.randomUUID().toString();
            payments.payForEver(id);
            payments.payForEver(id);
            assertThat(payments.runs(id)).as("charges made for one payment id").isEqualTo(1);
        }
    }

    /** The lock's rule: a wait between 0 and 1 ms is refused where users write it, naming what they wrote. */
    @Test
    void aWaitTimeBelowOneMillisecondFailsTheStartupNamingTheProperty() {
        Throwable failure = null;
        try (ConfigurableApplicationContext context = start("distlock.idempotency.wait-time=500us")) {
            Payments payments = context.getBean(Payments.class);
            payments.pay(UUID.randomUUID().toString());
        }
        catch (RuntimeException ex) {
            failure = ex;
        }
        assertThat(failure).as("a startup failure naming distlock.idempotency.wait-time").isNotNull()
                .hasStackTraceContaining("distlock.idempotency.wait-time");
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class App {

        @Bean(destroyMethod = "shutdown")
        RedissonClient redissonClient() {
            Config config = new Config();
            config.useSingleServer().setAddress(redis.uri());
            return Redisson.create(config);
        }

        @Bean
        Payments payments() {
            return new Payments();
        }
    }

    static class Payments {

        private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();

        @Idempotent(key = "'pay:' + #id")
        public String pay(String id) {
            runs.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
            return UUID.randomUUID().toString();
        }

        @Idempotent(key = "'pay-for-ever:' + #id", ttl = "9223372036854775807s")
        public String payForEver(String id) {
            runs.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
            return UUID.randomUUID().toString();
        }

        int runs(String id) {
            AtomicInteger count = runs.get(id);
            return (count != null) ? count.get() : 0;
        }
    }
}

package io.github.distlock.cache;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.stream.Collectors;

import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.redisson.autoconfigure.DistlockRedissonAutoConfiguration;
import io.github.distlock.testsupport.RedisServerExtension;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.cache.CacheManager;
import org.springframework.cache.annotation.Cacheable;
import org.springframework.cache.annotation.EnableCaching;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.data.redis.cache.RedisCacheConfiguration;
import org.springframework.data.redis.cache.RedisCacheManager;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Two instances (application contexts) share one Redis cache through Spring Data Redis's {@link RedisCacheManager} and
 * lock on the same Redis. 50 callers, 25 on each instance, ask at once for a product whose entry is missing (as after
 * its expiry: the key is absent from Redis). The loader counts its runs in Redis, where the test reads them on its own
 * connection, and does not finish before a second load has begun or every other caller is parked: without single
 * flight the other instance cannot find a stored entry and loads too.
 */
class CacheEntryLoadedOnceAcrossInstancesTest {

    static final int CALLERS = 50;

    static final String LOADS = "test:product-loads";

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    static ConfigurableApplicationContext first;

    static ConfigurableApplicationContext second;

    static RedisClient client;

    static StatefulRedisConnection<String, String> connection;

    static RedisCommands<String, String> commands;

    /** The caller threads, for the loader to see when the others are parked. */
    static final List<Thread> callers = new ArrayList<>();

    /** Callers past the start line (a thread still parked at the start shows WAITING too). */
    static final AtomicInteger started = new AtomicInteger();

    @BeforeAll
    static void startTwoInstances() {
        first = start("a");
        second = start("b");
        client = RedisClient.create(redis.uri());
        connection = client.connect();
        commands = connection.sync();
    }

    @AfterAll
    static void stop() {
        if (connection != null) {
            connection.close();
            client.shutdown();
        }
        if (first != null) {
            first.close();
        }
        if (second != null) {
            second.close();
        }
    }

    private static ConfigurableApplicationContext start(String instance) {
        return new SpringApplicationBuilder(App.class).web(WebApplicationType.NONE)
                .properties("spring.data.redis.host=" + redis.server().host(), "spring.data.redis.port=" + redis.port(),
                        "spring.application.name=shop-" + instance, "spring.main.banner-mode=off",
                        "distlock.cache.single-flight.enabled=" + System.getProperty("distlock.test.single-flight", "true"),
                        "distlock.cache.single-flight.wait-time=20s")
                .run();
    }

    @Test
    void fiftyCallersOnTwoInstancesOfAMissingEntryLoadItOnce() throws Exception {
        Products a = first.getBean(Products.class);
        Products b = second.getBean(Products.class);
        ExecutorService pool = Executors.newFixedThreadPool(CALLERS);
        try {
            CyclicBarrier start = new CyclicBarrier(CALLERS);
            List<Future<String>> answers = new ArrayList<>();
            CountDownLatch registered = new CountDownLatch(CALLERS);
            for (int i = 0; i < CALLERS; i++) {
                Products instance = (i % 2 == 0) ? a : b;
                answers.add(pool.submit(() -> {
                    synchronized (callers) {
                        callers.add(Thread.currentThread());
                    }
                    registered.countDown();
                    start.await();
                    started.incrementAndGet();
                    return instance.details(42);
                }));
            }
            registered.await();
            List<String> values = new ArrayList<>();
            for (Future<String> answer : answers) {
                values.add(answer.get(30, TimeUnit.SECONDS));
            }

            assertThat(commands.get(LOADS)).as("loads of product 42, counted in Redis").isEqualTo("1");
            Map<String, Long> byValue = values.stream().collect(Collectors.groupingBy(Function.identity(),
                    Collectors.counting()));
            assertThat(byValue).as("what the 50 callers got").hasSize(1);
            assertThat(byValue.values()).containsExactly((long) CALLERS);
            assertThat(values.get(0)).startsWith("product 42 loaded by shop-");
            assertThat(first.getBean(CacheManager.class)).as("the bean keeps its type").isInstanceOf(RedisCacheManager.class);
        }
        finally {
            pool.shutdownNow();
            synchronized (callers) {
                callers.clear();
            }
            started.set(0);
        }
    }

    /**
     * One instance of the shop: a Redis cache manager on the auto-configured connection, and the cached lookup (only
     * the auto-configurations it needs, so that two instances start quickly).
     */
    @SpringBootConfiguration
    @ImportAutoConfiguration({AopAutoConfiguration.class, DataRedisAutoConfiguration.class,
            DistlockRedissonAutoConfiguration.class, DistlockAutoConfiguration.class})
    @EnableCaching
    static class App {

        @Bean
        RedisCacheManager cacheManager(RedisConnectionFactory connectionFactory) {
            return RedisCacheManager.builder(connectionFactory)
                    .cacheDefaults(RedisCacheConfiguration.defaultCacheConfig().entryTtl(Duration.ofMinutes(5)))
                    .build();
        }

        @Bean
        Products products(StringRedisTemplate redis, Environment environment) {
            return new Products(redis, environment.getProperty("spring.application.name"));
        }
    }

    /** The product lookup both instances cache; its loader is the expensive call every caller would otherwise make. */
    static class Products {

        private final StringRedisTemplate redis;

        private final String instance;

        Products(StringRedisTemplate redis, String instance) {
            this.redis = redis;
            this.instance = instance;
        }

        @Cacheable(cacheNames = "products", sync = true)
        public String details(long id) {
            redis.opsForValue().increment(LOADS);
            Thread loader = Thread.currentThread();
            // a load that lasts until another load has begun (the other instance found nothing) or every other
            // caller is parked waiting for this one: the window in which a second load would show
            try {
                await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(10)).until(
                        () -> Long.parseLong(redis.opsForValue().get(LOADS)) > 1 || othersParked(loader));
            }
            catch (ConditionTimeoutException stillRunning) {
                // a window, not a requirement: the count of loads is what the test asserts
            }
            return "product " + id + " loaded by " + instance;
        }

        private static boolean othersParked(Thread loader) {
            synchronized (callers) {
                return started.get() == CALLERS && callers.stream().filter(thread -> thread != loader)
                        .allMatch(thread -> thread.getState() == Thread.State.WAITING
                                || thread.getState() == Thread.State.TIMED_WAITING
                                || thread.getState() == Thread.State.TERMINATED);
            }
        }
    }
}

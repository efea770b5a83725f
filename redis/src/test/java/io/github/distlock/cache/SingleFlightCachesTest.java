package io.github.distlock.cache;

import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import io.github.distlock.LockBackendException;
import io.github.distlock.LockTemplate;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.redisson.autoconfigure.DistlockRedissonAutoConfiguration;
import io.github.distlock.test.InMemoryLockProvider;
import io.github.distlock.test.InMemoryLocksAutoConfiguration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.cache.CacheManager;
import org.springframework.cache.annotation.Cacheable;
import org.springframework.cache.annotation.CachingConfigurer;
import org.springframework.cache.annotation.EnableCaching;
import org.springframework.cache.concurrent.ConcurrentMapCacheManager;
import org.springframework.cache.interceptor.CacheErrorHandler;
import org.springframework.cache.interceptor.LoggingCacheErrorHandler;
import org.springframework.cache.support.NoOpCacheManager;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * What single-flight caches do around the lock, on the test kit's in-memory locks (and a Redis that is down): the
 * wait's bound, a backend that fails, the startup checks, the asynchronous path and what stays as it was.
 */
class SingleFlightCachesTest {

    private final ApplicationContextRunner inMemory = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DistlockAutoConfiguration.class,
                    InMemoryLocksAutoConfiguration.class))
            .withUserConfiguration(Shop.class)
            .withPropertyValues("distlock.cache.single-flight.enabled=true");

    @Test
    void aCallerThatWaitsOutTheWaitFailsNamingTheCacheAndTheKeyAndDoesNotLoad() {
        inMemory.withPropertyValues("distlock.cache.single-flight.wait-time=50ms").run(context -> {
            Products products = context.getBean(Products.class);
            Loads loads = context.getBean(Loads.class);
            CountDownLatch held = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            // another caller (another instance, as far as the lock can tell) is loading product 7
            LockTemplate locks = context.getBean(LockTemplate.class);
            CompletableFuture<Void> loading = CompletableFuture.runAsync(() -> {
                try {
                    locks.run("cache:products:7", () -> {
                        held.countDown();
                        release.await();
                    });
                }
                catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
            });
            try {
                assertThat(held.await(5, TimeUnit.SECONDS)).isTrue();
                assertThatThrownBy(() -> products.details(7)).isInstanceOf(CacheLoadTimeoutException.class)
                        .hasMessageContaining("Cache 'products', key '7'")
                        .hasMessageContaining("distlock.cache.single-flight.wait-time (50 ms)")
                        .hasMessageContaining("'lock:cache:products:7'")
                        .satisfies(ex -> assertThat(((CacheLoadTimeoutException) ex).getCacheName()).isEqualTo("products"));
                assertThat(loads.loads.get()).as("loads").isZero();
            }
            finally {
                release.countDown();
                loading.join();
            }
        });
    }

    @Test
    void theEntryIsLoadedUnderItsLockAndReadWithoutIt() {
        inMemory.run(context -> {
            Products products = context.getBean(Products.class);
            Loads loads = context.getBean(Loads.class);
            InMemoryLockProvider locks = context.getBean(InMemoryLockProvider.class);
            loads.whileLoading = () -> loads.lockedWhileLoading.set(locks.isLocked("lock:cache:products:1"));

            assertThat(products.details(1)).isEqualTo("product 1");
            assertThat(products.details(1)).isEqualTo("product 1");

            assertThat(loads.loads.get()).isEqualTo(1);
            assertThat(loads.lockedWhileLoading).isTrue();
            assertThat(locks.lockedKeys()).isEmpty();
            assertThat(context.getBean(CacheManager.class)).isInstanceOf(ConcurrentMapCacheManager.class);
            assertThat(context.getBean(CacheManager.class).getCache("products")).isInstanceOf(SingleFlightCache.class);
        });
    }

    @Test
    void aCompletableFutureMethodHoldsTheLockUntilItsLoadCompletes() {
        inMemory.run(context -> {
            Products products = context.getBean(Products.class);
            Loads loads = context.getBean(Loads.class);
            InMemoryLockProvider locks = context.getBean(InMemoryLockProvider.class);
            CompletableFuture<String> first = products.detailsLater(3);
            CompletableFuture<String> second = products.detailsLater(3);
            await().atMost(Duration.ofSeconds(5)).until(() -> loads.pending.get() != null);
            assertThat(locks.isLocked("lock:cache:products:3")).as("held while the load runs").isTrue();

            loads.pending.get().complete("product 3");

            assertThat(first.get(5, TimeUnit.SECONDS)).isEqualTo("product 3");
            assertThat(second.get(5, TimeUnit.SECONDS)).isEqualTo("product 3");
            assertThat(loads.loads.get()).isEqualTo(1);
            await().atMost(Duration.ofSeconds(5)).until(() -> locks.lockedKeys().isEmpty());
        });
    }

    @Test
    void aLockBackendThatIsDownFailsTheCallWithoutLoadingEvenWhereCacheErrorsAreTolerated() throws Exception {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class,
                        DistlockRedissonAutoConfiguration.class, DistlockAutoConfiguration.class))
                .withUserConfiguration(Shop.class)
                // an application that tolerates cache errors: Spring calls the method itself after one
                .withBean(CachingConfigurer.class, () -> new CachingConfigurer() {
                    @Override
                    public CacheErrorHandler errorHandler() {
                        return new LoggingCacheErrorHandler();
                    }
                })
                .withPropertyValues("distlock.cache.single-flight.enabled=true", "spring.data.redis.host=127.0.0.1",
                        "spring.data.redis.port=" + port, "distlock.redis.retry-attempts=0",
                        "distlock.redis.retry-delay=10ms")
                .run(context -> {
                    Products products = context.getBean(Products.class);
                    Loads loads = context.getBean(Loads.class);
                    assertThatThrownBy(() -> products.details(5)).isInstanceOf(LockBackendException.class)
                            .hasMessageContaining("'lock:cache:products:5'");
                    assertThat(loads.loads.get()).as("loads without the lock").isZero();
                });
    }

    @Test
    void aWaitTimeBelowOneMillisecondFailsTheStartupNamingTheProperty() {
        inMemory.withPropertyValues("distlock.cache.single-flight.wait-time=0s").run(context ->
                assertThat(context).getFailure().rootCause()
                        .hasMessageContaining("distlock.cache.single-flight.wait-time must be at least 1 ms"));
    }

    @Test
    void withoutALockBackendTheStartupFailsRatherThanLoadUnlocked() {
        new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(DistlockAutoConfiguration.class))
                .withUserConfiguration(Shop.class)
                .withPropertyValues("distlock.cache.single-flight.enabled=true")
                .run(context -> assertThat(context).getFailure()
                        .hasMessageContaining("distlock.cache.single-flight.enabled=true, but there is no lock backend")
                        .hasMessageContaining("[cacheManager]"));
    }

    @Test
    void offByDefaultAndACacheThatStoresNothingIsLeftAlone() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DistlockAutoConfiguration.class,
                        InMemoryLocksAutoConfiguration.class))
                .withUserConfiguration(Shop.class).run(context -> assertThat(
                        context.getBean(CacheManager.class).getCache("products")).isNotInstanceOf(SingleFlightCache.class));
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DistlockAutoConfiguration.class,
                        InMemoryLocksAutoConfiguration.class))
                .withBean(NoOpCacheManager.class).withPropertyValues("distlock.cache.single-flight.enabled=true")
                .run(context -> assertThat(context.getBean(CacheManager.class).getCache("products"))
                        .isNotInstanceOf(SingleFlightCache.class));
    }

    @Configuration(proxyBeanMethods = false)
    @EnableCaching
    static class Shop {

        @Bean
        ConcurrentMapCacheManager cacheManager() {
            return new ConcurrentMapCacheManager();
        }

        @Bean
        Loads loads() {
            return new Loads();
        }

        @Bean
        Products products(Loads loads) {
            return new Products(loads);
        }
    }

    /** What the loader did, apart from the proxied bean (whose fields a proxy does not carry). */
    static class Loads {

        final AtomicInteger loads = new AtomicInteger();

        final AtomicBoolean lockedWhileLoading = new AtomicBoolean();

        final AtomicReference<CompletableFuture<String>> pending = new AtomicReference<>();

        volatile Runnable whileLoading = () -> {
        };
    }

    static class Products {

        private final Loads loads;

        Products(Loads loads) {
            this.loads = loads;
        }

        @Cacheable(cacheNames = "products", sync = true)
        public String details(long id) {
            loads.loads.incrementAndGet();
            loads.whileLoading.run();
            return "product " + id;
        }

        @Cacheable(cacheNames = "products", sync = true)
        public CompletableFuture<String> detailsLater(long id) {
            loads.loads.incrementAndGet();
            CompletableFuture<String> load = new CompletableFuture<>();
            loads.pending.set(load);
            return load;
        }
    }
}

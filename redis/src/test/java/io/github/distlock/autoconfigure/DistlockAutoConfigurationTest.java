package io.github.distlock.autoconfigure;

import io.github.distlock.redisson.autoconfigure.RedissonConfigCustomizer;
import io.github.distlock.redisson.autoconfigure.DistlockRedissonAutoConfiguration;
import java.util.concurrent.atomic.AtomicReference;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.metrics.MicrometerLockListener;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.github.distlock.aop.DistributedLockAdvisor;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.ConfigAccess;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;

class DistlockAutoConfigurationTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class, AopAutoConfiguration.class,
                    DistlockRedissonAutoConfiguration.class, DistlockAutoConfiguration.class));

    /**
     * A runner whose Redisson client does not connect on creation, so that unreachable topologies can be mapped. The
     * client still tries to connect in the background and again when the context closes (the provider's close sends
     * its last commands): one attempt without a pause, not Redisson's default of five attempts 1-2 s apart, each of
     * which would cost these tests seconds of retrying hosts that do not exist. A customizer's retry setting still
     * wins over these properties.
     */
    private ApplicationContextRunner capturingConfig(AtomicReference<Config> captured) {
        return runner.withPropertyValues("distlock.redis.retry-attempts=0", "distlock.redis.retry-delay=0ms")
                .withBean(RedissonConfigCustomizer.class, () -> config -> {
            config.setLazyInitialization(true);
            captured.set(config);
        });
    }

    @Test
    void buildsTheClientFromSpringDataRedisAndWiresTheTemplate() {
        runner.withPropertyValues("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + redis.port())
                .run(context -> {
                    assertThat(context).hasNotFailed()
                            .hasSingleBean(RedissonClient.class)
                            .hasSingleBean(RedissonLockProvider.class)
                            .hasSingleBean(LockTemplate.class)
                            .hasSingleBean(DistributedLockAdvisor.class);
                    assertThat(context.getBean(LockTemplate.class).execute("k", () -> "locked")).isEqualTo("locked");
                });
    }

    @Test
    void distlockBackendChoosesAmongConfiguredBackends() {
        LockProvider other = request -> CompletableFuture.completedFuture(null);
        ApplicationContextRunner twoBackends = runner
                .withPropertyValues("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + redis.port())
                .withBean("jdbcBackend", DistlockBackend.class, () -> new DistlockBackend("jdbc", "test", () -> other));
        twoBackends.withPropertyValues("distlock.backend=redis").run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(RedissonLockProvider.class);
            assertThat(context.getBean(LockTemplate.class).execute("k", () -> "locked")).isEqualTo("locked");
        });
        twoBackends.withPropertyValues("distlock.backend=JDBC").run(context -> {
            assertThat(context).hasNotFailed().doesNotHaveBean(RedissonClient.class);
            assertThat(context.getBean(LockProvider.class)).isSameAs(other);
        });
        twoBackends.run(context -> assertThat(context).hasFailed().getFailure()
                .rootCause().hasMessageContaining("distlock found 2 lock backends configured"));
    }

    @Test
    void anApplicationsOwnProviderWinsOverEveryBackend() {
        LockProvider own = request -> CompletableFuture.completedFuture(null);
        runner.withPropertyValues("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + redis.port())
                .withBean("jdbcBackend", DistlockBackend.class, () -> new DistlockBackend("jdbc", "test",
                        () -> { throw new AssertionError("not chosen"); }))
                .withBean("own", LockProvider.class, () -> own)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(LockProvider.class)).isSameAs(own);
                });
    }

    @Test
    void mapsStandaloneWithCredentialsDatabaseTimeoutsAndWatchdog() {
        AtomicReference<Config> captured = new AtomicReference<>();
        capturingConfig(captured)
                .withPropertyValues("spring.data.redis.host=redis.example", "spring.data.redis.port=6380",
                        "spring.data.redis.username=app", "spring.data.redis.password=s3cret",
                        "spring.data.redis.database=5", "spring.data.redis.timeout=750ms",
                        "spring.data.redis.connect-timeout=2s", "spring.data.redis.client-name=orders",
                        "distlock.watchdog-timeout=12s")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    Config config = captured.get();
                    var single = ConfigAccess.single(config);
                    assertThat(single.getAddress()).isEqualTo("redis://redis.example:6380");
                    assertThat(single.getDatabase()).isEqualTo(5);
                    assertThat(single.getTimeout()).isEqualTo(750);
                    assertThat(single.getConnectTimeout()).isEqualTo(2000);
                    assertThat(single.getClientName()).isEqualTo("orders");
                    assertThat(config.getUsername()).isEqualTo("app");
                    assertThat(config.getPassword()).isEqualTo("s3cret");
                    assertThat(config.getLockWatchdogTimeout()).isEqualTo(12_000);
                    int cpus = Math.max(2, Runtime.getRuntime().availableProcessors());
                    assertThat(config.getNettyThreads()).isEqualTo(Math.min(32, 2 * cpus));
                    assertThat(config.getThreads()).isEqualTo(Math.min(16, cpus));
                });
    }

    @Test
    void customizersReachTheServerSettingsOfTheChosenMode() {
        AtomicReference<Config> captured = new AtomicReference<>();
        capturingConfig(captured)
                .withBean("failFast", RedissonConfigCustomizer.class,
                        () -> RedissonConfigCustomizer.server(server -> server.setRetryAttempts(1)))
                .withPropertyValues("spring.data.redis.host=redis.example")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(ConfigAccess.single(captured.get()).getRetryAttempts()).isEqualTo(1);
                    assertThat(ConfigAccess.single(captured.get()).getAddress()).isEqualTo("redis://redis.example:6379");
                });
    }

    @Test
    void mapsAUrlWithSslToRediss() {
        AtomicReference<Config> captured = new AtomicReference<>();
        capturingConfig(captured)
                .withPropertyValues("spring.data.redis.url=rediss://user:pw@secure.example:6390/2")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    var single = ConfigAccess.single(captured.get());
                    assertThat(single.getAddress()).isEqualTo("rediss://secure.example:6390");
                    assertThat(single.getDatabase()).isEqualTo(2);
                    assertThat(captured.get().getPassword()).isEqualTo("pw");
                });
    }

    @Test
    void mapsSentinel() {
        AtomicReference<Config> captured = new AtomicReference<>();
        capturingConfig(captured)
                .withPropertyValues("spring.data.redis.sentinel.master=mymaster",
                        "spring.data.redis.sentinel.nodes=s1.example:26379,s2.example:26380",
                        "spring.data.redis.sentinel.password=sentinel-pw", "spring.data.redis.password=data-pw",
                        "spring.data.redis.database=3")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    var sentinel = ConfigAccess.sentinel(captured.get());
                    assertThat(sentinel.getMasterName()).isEqualTo("mymaster");
                    assertThat(sentinel.getSentinelAddresses())
                            .containsExactly("redis://s1.example:26379", "redis://s2.example:26380");
                    assertThat(sentinel.getSentinelPassword()).isEqualTo("sentinel-pw");
                    assertThat(sentinel.getDatabase()).isEqualTo(3);
                    assertThat(captured.get().getPassword()).isEqualTo("data-pw");
                });
    }

    @Test
    void mapsCluster() {
        AtomicReference<Config> captured = new AtomicReference<>();
        capturingConfig(captured)
                .withPropertyValues("spring.data.redis.cluster.nodes=c1.example:7000,c2.example:7001,c3.example:7002",
                        "spring.data.redis.ssl.enabled=true")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(ConfigAccess.cluster(captured.get()).getNodeAddresses()).containsExactly(
                            "rediss://c1.example:7000", "rediss://c2.example:7001", "rediss://c3.example:7002");
                });
    }

    @Test
    void usesTheApplicationsOwnRedissonClient() {
        runner.withUserConfiguration(OwnClient.class).run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(RedissonClient.class);
            RedissonClient own = context.getBean("ownRedisson", RedissonClient.class);
            assertThat(((RedissonLockProvider) context.getBean(LockProvider.class)).getRedisson()).isSameAs(own);
            assertThat(context.getBean(LockTemplate.class).execute("k", () -> "locked")).isEqualTo("locked");
        });
    }

    @Test
    void recordsLockMetricsWhenThereIsAMeterRegistry() {
        runner.withConfiguration(AutoConfigurations.of(DistlockMetricsAutoConfiguration.class))
                .withBean(SimpleMeterRegistry.class)
                .withPropertyValues("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + redis.port())
                .run(context -> {
                    LockTemplate locks = context.getBean(LockTemplate.class);
                    // the second try comes from another thread: the same thread would re-enter
                    locks.run("metrics", () -> assertThat(CompletableFuture.supplyAsync(() -> locks.tryRun("metrics",
                            LockOptions.waitFor(Duration.ZERO), () -> { })).get(10, TimeUnit.SECONDS)).isFalse());

                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    assertThat(registry.get("distlock.acquire").tag("result", "acquired").timer().count()).isOne();
                    assertThat(registry.get("distlock.acquire").tag("result", "not_acquired").timer().count()).isOne();
                    assertThat(registry.get("distlock.held").tag("result", "released").timer().count()).isOne();
                    assertThat(registry.get("distlock.held").tag("result", "lease_lost").timer().count()).isZero();
                });
    }

    @Test
    void noMetricsListenerWithoutARegistry() {
        runner.withConfiguration(AutoConfigurations.of(DistlockMetricsAutoConfiguration.class))
                .withPropertyValues("spring.data.redis.port=" + redis.port())
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(MicrometerLockListener.class));
    }

    @Test
    void disabledRegistersNothing() {
        runner.withPropertyValues("distlock.enabled=false", "spring.data.redis.port=" + redis.port()).run(context -> {
            assertThat(context).hasNotFailed()
                    .doesNotHaveBean(RedissonClient.class)
                    .doesNotHaveBean(LockProvider.class)
                    .doesNotHaveBean(LockTemplate.class)
                    .doesNotHaveBean(DistributedLockAdvisor.class)
                    .doesNotHaveBean(DistlockProperties.class);
        });
    }

    /**
     * Without a backend, annotated methods would run unlocked: the startup fails instead and says how to configure
     * one.
     */
    @Test
    void annotatedMethodsWithoutABackendFailTheStartup() {
        runner.withClassLoader(new FilteredClassLoader("org.redisson")).withBean(Locked.class).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).hasStackTraceContaining(
                    "@DistributedLock on " + Locked.class.getName() + ".place() cannot take a lock: no lock backend")
                    .hasStackTraceContaining("distlock.enabled=false");
        });
        // the Redis auto-configuration excluded: no connection details, so no client and no provider either
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class,
                        DistlockRedissonAutoConfiguration.class, DistlockAutoConfiguration.class))
                .withBean(Locked.class)
                .run(context -> assertThat(context).hasFailed());
    }

    @Test
    void withoutAnnotatedMethodsOrABackendTheApplicationStartsWithoutATemplate() {
        runner.withClassLoader(new FilteredClassLoader("org.redisson")).run(context -> {
            assertThat(context).hasNotFailed()
                    .doesNotHaveBean(LockProvider.class)
                    .doesNotHaveBean(LockTemplate.class);
        });
    }

    @Test
    void disabledLetsAnnotatedMethodsRunWithoutALock() {
        runner.withClassLoader(new FilteredClassLoader("org.redisson")).withBean(Locked.class)
                .withPropertyValues("distlock.enabled=false")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(Locked.class).place("u")).isEqualTo("ran");
                });
    }

    @Test
    void rejectsASubMillisecondLeaseNamingTheProperty() {
        runner.withPropertyValues("distlock.lease-time=500us", "spring.data.redis.port=" + redis.port()).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause()
                    .hasMessageContaining("distlock.lease-time must be 0 (or unset for the watchdog) or at least 1 ms, was PT0.0005S");
        });
    }

    static class Locked {
        @io.github.distlock.DistributedLock(key = "'order:' + #userId")
        public String place(String userId) {
            return "ran";
        }
    }

    @Test
    void rejectsANegativeWaitTimeNamingTheProperty() {
        runner.withPropertyValues("distlock.wait-time=-1s", "spring.data.redis.port=" + redis.port()).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause()
                    .hasMessageContaining("distlock.wait-time must be 0 or at least 1 ms, was PT-1S");
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnClient {

        @Bean(destroyMethod = "shutdown")
        RedissonClient ownRedisson() {
            Config config = new Config();
            config.useSingleServer().setAddress(redis.uri());
            return Redisson.create(config);
        }
    }
}

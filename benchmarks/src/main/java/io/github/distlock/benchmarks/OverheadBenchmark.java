package io.github.distlock.benchmarks;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/**
 * distlock's own cost per call, without Redis: the same proxy, interceptor, key evaluation and template, on a lock
 * provider that grants every lock at once. The difference to {@link #provider} is exactly what the library adds to a
 * backend's cycle; compare it with the Redis cycle of {@link LockCycleBenchmark} for the overhead ratio.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@State(Scope.Benchmark)
public class OverheadBenchmark {

    private static final LockOptions WATCHDOG_TRY_ONCE = new LockOptions(Duration.ZERO, LockOptions.WATCHDOG, false);

    private ConfigurableApplicationContext context;
    private LockProvider provider;
    private LockTemplate template;
    private LockedService service;
    private LockedService plain;
    private String id;

    @Setup(Level.Trial)
    public void start() {
        context = new SpringApplicationBuilder(NoRedisApplication.class)
                .web(WebApplicationType.NONE)
                .logStartupInfo(false)
                .properties("spring.main.banner-mode=off", "logging.level.root=WARN",
                        // no Redis here: the only lock provider is the in-memory one below
                        "spring.autoconfigure.exclude="
                                + "io.github.distlock.redisson.autoconfigure.DistlockRedissonAutoConfiguration,"
                                + "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration,"
                                // nor a database: HikariCP is on the class path for BackendComparison
                                + BenchApplication.DATA_SOURCE_AUTO_CONFIGURATION)
                .run();
        provider = context.getBean(LockProvider.class);
        template = context.getBean(LockTemplate.class);
        service = context.getBean(LockedService.class);
        plain = new LockedService();
        // not a constant, so the JIT cannot fold the key concatenation away
        id = "user-" + System.nanoTime() % 1000;
    }

    @TearDown(Level.Trial)
    public void stop() {
        context.close();
    }

    /** The method without any lock: the proxy-free baseline. */
    @Benchmark
    public int plainCall() {
        return plain.tryOnceWatchdog(id);
    }

    /** The provider alone, with the key built as the template builds it. */
    @Benchmark
    public boolean provider() throws Exception {
        LockHandle handle = provider.acquire(new LockRequest("lock:".concat("bench:" + id), 0, 0, false,
                LockOwner.next())).get();
        return handle.release();
    }

    /** {@code LockTemplate.execute} with a lambda callback. */
    @Benchmark
    public int template() {
        return template.execute("bench:" + id, WATCHDOG_TRY_ONCE, () -> 1);
    }

    /** The {@code @DistributedLock} method through the Spring proxy, key {@code 'bench:' + #id}. */
    @Benchmark
    public int annotation() {
        return service.tryOnceWatchdog(id);
    }

    /** The application: distlock's auto-configuration on {@link GrantingLockProvider}. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class NoRedisApplication {

        @Bean
        LockProvider grantingLockProvider() {
            return new GrantingLockProvider();
        }

        @Bean
        LockedService lockedService() {
            return new LockedService();
        }
    }

    /** Grants every lock at once and releases it at once: a backend that costs nothing. */
    static final class GrantingLockProvider implements LockProvider {

        private static final CompletableFuture<Boolean> RELEASED = CompletableFuture.completedFuture(Boolean.TRUE);

        private static final LockHandle HANDLE = new LockHandle() {
            @Override
            public long fencingToken() {
                return -1;
            }

            @Override
            public CompletableFuture<Boolean> releaseAsync() {
                return RELEASED;
            }
        };

        private static final CompletableFuture<LockHandle> GRANTED = CompletableFuture.completedFuture(HANDLE);

        /** Read by nobody; written so that the JIT must build the key, as a real backend needs it. */
        int lastKeyLength;

        @Override
        public CompletableFuture<LockHandle> acquire(LockRequest request) {
            lastKeyLength = request.key().length();
            return GRANTED;
        }
    }
}

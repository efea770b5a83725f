package io.github.distlock.integration;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;

import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.integration.autoconfigure.DistlockIntegrationAutoConfiguration;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.test.InMemoryLockProvider;
import io.github.distlock.test.InMemoryLocksAutoConfiguration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.integration.support.locks.DefaultLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * When the {@link DistlockLockRegistry} bean is defined, with which settings, and what a wrong setting says.
 */
class LockRegistryAutoConfigurationTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(InMemoryLocksAutoConfiguration.class,
                    DistlockAutoConfiguration.class, DistlockIntegrationAutoConfiguration.class));

    @Test
    void aFencedRegistryWithTheDefaultPrefixIsDefinedOnTheConfiguredBackend() {
        runner.run(context -> {
            DistlockLockRegistry registry = context.getBean(DistlockLockRegistry.class);
            DistlockLock lock = registry.obtain("orders");
            assertThat(lock.fullKey()).isEqualTo("lock:integration:orders");
            lock.lock();
            try {
                assertThat(lock.fencingToken()).as("fenced by default on a backend that fences").isPresent();
            }
            finally {
                lock.unlock();
            }
        });
    }

    @Test
    void thePrefixAndFencingFollowTheProperties() {
        runner.withPropertyValues("distlock.integration.lock-registry.key-prefix=si/",
                "distlock.integration.lock-registry.fenced=false").run(context -> {
            DistlockLock lock = context.getBean(DistlockLockRegistry.class).obtain(42);
            assertThat(lock.fullKey()).isEqualTo("lock:si/42");
            lock.lock();
            try {
                assertThat(lock.fencingToken()).isEmpty();
            }
            finally {
                lock.unlock();
            }
        });
    }

    @Test
    void noRegistryWhenSwitchedOffOrTheApplicationHasOneOrSpringIntegrationIsAbsent() {
        runner.withPropertyValues("distlock.integration.lock-registry.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean(LockRegistry.class));
        runner.withBean(DefaultLockRegistry.class)
                .run(context -> assertThat(context).getBean(LockRegistry.class).isInstanceOf(DefaultLockRegistry.class));
        runner.withClassLoader(new FilteredClassLoader(LockRegistry.class))
                .run(context -> assertThat(context).doesNotHaveBean(DistlockLockRegistry.class));
    }

    @Test
    void fencingAskedOfABackendWithoutItFailsTheStartupNamingTheProperty() {
        InMemoryLockProvider memory = new InMemoryLockProvider();
        LockProvider unfenced = new LockProvider() {
            @Override
            public CompletableFuture<LockHandle> acquire(LockRequest request) {
                return memory.acquire(request);
            }
        };
        runner.withBean(LockProvider.class, () -> unfenced)
                .withPropertyValues("distlock.integration.lock-registry.fenced=true")
                .run(context -> assertThat(context).hasFailed().getFailure()
                        .hasStackTraceContaining("distlock.integration.lock-registry.fenced is true"));
        runner.withBean(LockProvider.class, () -> unfenced).run(context -> {
            DistlockLock lock = context.getBean(DistlockLockRegistry.class).obtain("k");
            lock.lock();
            try {
                assertThat(lock.fencingToken()).as("unset: unfenced on such a backend").isEmpty();
            }
            finally {
                lock.unlock();
            }
        });
        memory.close();
    }

    @Test
    void thePropertiesAreInTheConfigurationMetadata() throws Exception {
        try (InputStream metadata = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
            String json = new String(metadata.readAllBytes(), StandardCharsets.UTF_8);
            assertThat(json).contains("\"distlock.integration.lock-registry.enabled\"",
                    "\"distlock.integration.lock-registry.key-prefix\"", "\"distlock.integration.lock-registry.fenced\"");
        }
    }
}

package io.github.distlock.test;

import io.github.distlock.LockTemplate;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.redisson.autoconfigure.DistlockRedissonAutoConfiguration;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.spi.LockProvider;
import org.junit.jupiter.api.Test;
import org.redisson.api.RedissonClient;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.annotation.ImportCandidates;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;

/** When the in-memory provider is on, and that it is never on by accident. */
class InMemoryLocksAutoConfigurationTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class,
                    DistlockRedissonAutoConfiguration.class, DistlockAutoConfiguration.class));

    /** What the annotation imports (OrderServiceTest uses the annotation itself, in a whole application). */
    @Test
    void theTemplateRunsOnInMemoryLocksAndNoRedisClientIsBuilt() {
        runner.withConfiguration(AutoConfigurations.of(InMemoryLocksAutoConfiguration.class)).run(context -> {
            assertThat(context).hasSingleBean(InMemoryLockProvider.class).doesNotHaveBean(RedissonClient.class);
            assertThat(context.getBean(LockProvider.class)).isInstanceOf(InMemoryLockProvider.class);
            LockTemplate template = context.getBean(LockTemplate.class);
            assertThat(template.execute("k", () -> context.getBean(InMemoryLockProvider.class).isLocked("lock:k")))
                    .isTrue();
        });
    }

    @Test
    void withoutTheAnnotationTheConfiguredBackendIsUsed() {
        runner.run(context -> {
            assertThat(context).doesNotHaveBean(InMemoryLockProvider.class);
            assertThat(context.getBean(LockProvider.class)).isInstanceOf(RedissonLockProvider.class);
        });
    }

    @Test
    void itIsNotAnAutoConfigurationAnApplicationGetsByItself() {
        assertThat(ImportCandidates.load(AutoConfiguration.class, getClass().getClassLoader()).getCandidates())
                .contains(DistlockAutoConfiguration.class.getName())
                .doesNotContain(InMemoryLocksAutoConfiguration.class.getName());
    }

    @Test
    void aLockProviderOfTheTestsOwnWins() {
        runner.withConfiguration(AutoConfigurations.of(InMemoryLocksAutoConfiguration.class))
                .withUserConfiguration(OwnProvider.class).run(context -> {
            assertThat(context.getBean(LockProvider.class)).isSameAs(context.getBean(OwnProvider.class).provider);
            assertThat(context.getBeansOfType(InMemoryLockProvider.class)).hasSize(1);
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnProvider {

        final InMemoryLockProvider provider = new InMemoryLockProvider();

        @Bean
        InMemoryLockProvider myLockProvider() {
            return provider;
        }
    }
}

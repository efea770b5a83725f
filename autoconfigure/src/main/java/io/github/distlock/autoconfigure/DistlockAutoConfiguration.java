package io.github.distlock.autoconfigure;

import java.util.List;
import java.util.stream.Collectors;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.DistlockConfigurationException;
import io.github.distlock.LockListener;
import io.github.distlock.LockTemplate;
import io.github.distlock.aop.DistributedLockAdvisor;
import io.github.distlock.cache.SingleFlightCacheManagerPostProcessor;
import io.github.distlock.aop.DistributedLockInterceptor;
import io.github.distlock.aop.DistributedLockMethodValidator;
import io.github.distlock.aop.LockOperationSource;
import io.github.distlock.observation.LockObservationConvention;
import io.github.distlock.spi.LockInspector;
import io.github.distlock.spi.LockInstance;
import io.github.distlock.spi.LockProvider;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.util.function.SingletonSupplier;

/**
 * {@link LockTemplate} and the {@link io.github.distlock.DistributedLock} advisor, on whichever {@link LockProvider}
 * is there: an application's own, or the one backend module that is configured (Redis in the starter), or the one
 * {@code distlock.backend} chooses among several. Backend modules order themselves before this class.
 *
 * <p>Fails closed: the advisor and the startup checks are registered whether or not a backend is configured, and an
 * annotated method without a backend fails the startup. Backing off instead would let every annotated method run
 * without its lock. Only {@code distlock.enabled=false} turns locking off.
 */
@AutoConfiguration(after = AopAutoConfiguration.class)
@ConditionalOnProperty(prefix = "distlock", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(DistlockProperties.class)
@Import(DistlockProxyRegistrar.class)
public final class DistlockAutoConfiguration {

    /**
     * The backend in use: the only one configured, or the one {@code distlock.backend} chooses. Declared before the
     * template, whose condition looks for it.
     */
    @Bean
    @ConditionalOnMissingBean(LockProvider.class)
    @ConditionalOnBean(DistlockBackend.class)
    LockProvider distlockLockProvider(List<DistlockBackend> candidates, DistlockProperties properties) {
        // backends guard themselves with @ConditionalOnDistlockBackend; filtered again for one registered without it
        List<DistlockBackend> backends = (properties.getBackend() == null) ? candidates : candidates.stream()
                .filter(backend -> backend.isNamed(properties.getBackend())).toList();
        if (backends.isEmpty()) {
            throw new DistlockConfigurationException("distlock.backend=" + properties.getBackend() + " chooses a backend that is not configured; configured are: "
                    + candidates.stream().map(DistlockBackend::toString).collect(Collectors.joining("; ")) + ".",
                    "Choose one of the configured backends with distlock.backend, or configure the chosen one.", null);
        }
        if (backends.size() > 1) {
            backends = backends.stream().sorted(java.util.Comparator.comparing(DistlockBackend::name)).toList();
            String names = backends.stream().map(DistlockBackend::name).collect(Collectors.joining(", "));
            throw new DistlockConfigurationException("distlock found " + backends.size() + " lock backends configured: "
                    + backends.stream().map(DistlockBackend::toString).collect(Collectors.joining("; "))
                    + ". It will not guess which one guards your locks: two instances that chose differently would "
                    + "not exclude each other.",
                    "Choose one with the property distlock.backend (" + names + "), the same on every instance.", null);
        }
        return backends.get(0).provider().get();
    }

    @Bean(destroyMethod = "shutdown")
    @ConditionalOnBean(LockProvider.class)
    @ConditionalOnMissingBean(LockTemplate.class)
    DefaultLockTemplate lockTemplate(LockProvider provider, DistlockProperties properties,
            ObjectProvider<LockListener> listeners, ObjectProvider<ObservationRegistry> observationRegistry,
            ObjectProvider<LockObservationConvention> observationConvention) {
        DefaultLockTemplate template = new DefaultLockTemplate(provider, properties.getKeyPrefix(),
                properties.getWaitTime(), properties.getLeaseTime(), listeners.orderedStream().toList(),
                properties.isReleaseAfterTransaction());
        observationRegistry.ifUnique(template::setObservationRegistry);
        observationConvention.ifUnique(template::setObservationConvention);
        return template;
    }

    /** This instance as a person reads it: {@code spring.application.name}, host and pid. */
    @Bean
    @ConditionalOnMissingBean
    LockInstance distlockInstance(Environment environment) {
        return LockInstance.current(environment.getProperty("spring.application.name", "application"));
    }

    /**
     * Announces this instance to a backend that can name the holders of a lock ({@link LockInspector}), once every
     * singleton exists; it does not wait for the backend (an unreachable one is written to when it is back).
     */
    @Bean
    @ConditionalOnBean(LockProvider.class)
    SmartInitializingSingleton distlockInstanceAnnouncement(ObjectProvider<LockProvider> provider,
            ObjectProvider<LockInstance> instance) {
        return () -> {
            if (provider.getIfUnique() instanceof LockInspector inspector) {
                LockInstance self = instance.getIfUnique();
                if (self != null) {
                    inspector.announce(self);
                }
            }
        };
    }

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    static LockOperationSource distributedLockOperationSource(BeanFactory beanFactory, Environment environment,
            DistlockProperties properties) {
        return new LockOperationSource(beanFactory, environment, properties.getWaitTime(), properties.getLeaseTime());
    }

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    static DistributedLockAdvisor distributedLockAdvisor(ObjectProvider<LockOperationSource> operations,
            ObjectProvider<LockTemplate> lockTemplate, Environment environment) {
        DistributedLockInterceptor interceptor = new DistributedLockInterceptor(
                SingletonSupplier.of(operations::getObject), SingletonSupplier.of(lockTemplate::getObject));
        // read from the environment, not DistlockProperties: advisors are created before properties beans are bound
        int order = Binder.get(environment).bind("distlock.order", Integer.class).orElse(DistlockProperties.DEFAULT_ORDER);
        return new DistributedLockAdvisor(interceptor, order);
    }

    /**
     * Single-flight caches: every {@code CacheManager} bean loads a missing entry under the entry's lock. The wait is
     * bound here, from the environment (a post-processor comes before the properties bean), and checked at startup.
     */
    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    @ConditionalOnProperty(prefix = "distlock.cache.single-flight", name = "enabled", havingValue = "true")
    static SingleFlightCacheManagerPostProcessor distlockSingleFlightCaches(ObjectProvider<LockTemplate> lockTemplate,
            Environment environment) {
        DistlockProperties.SingleFlight settings = Binder.get(environment)
                .bind("distlock.cache.single-flight", DistlockProperties.SingleFlight.class)
                .orElseGet(DistlockProperties.SingleFlight::new);
        return new SingleFlightCacheManagerPostProcessor(lockTemplate, settings.getWaitTime());
    }

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    static DistributedLockMethodValidator distributedLockMethodValidator(ObjectProvider<LockOperationSource> operations,
            ListableBeanFactory beanFactory, ObjectProvider<LockProvider> providers, Environment environment) {
        return new DistributedLockMethodValidator(operations,
                () -> beanFactory.getBeanNamesForType(LockTemplate.class, true, false).length > 0,
                (type, fenced) -> {
                    LockProvider provider = providers.getIfUnique();
                    return provider == null || provider.supports(type, fenced);
                }, environment.getProperty("distlock.backend"), () -> {
                    LockProvider provider = providers.getIfUnique();
                    return provider == null || provider.supportsPermits();
                });
    }
}

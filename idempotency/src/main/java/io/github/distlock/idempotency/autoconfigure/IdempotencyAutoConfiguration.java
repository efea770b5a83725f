package io.github.distlock.idempotency.autoconfigure;

import io.github.distlock.LockTemplate;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.autoconfigure.DistlockProperties;
import io.github.distlock.idempotency.IdempotencyStore;
import io.github.distlock.idempotency.IdempotencyTemplate;
import io.github.distlock.idempotency.IdempotentAdvisor;
import io.github.distlock.idempotency.IdempotentInterceptor;
import io.github.distlock.idempotency.IdempotentMethodValidator;
import io.github.distlock.idempotency.IdempotentOperationSource;
import io.github.distlock.idempotency.RedissonIdempotencyStore;
import org.redisson.api.RedissonClient;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.util.function.SingletonSupplier;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@link IdempotencyTemplate} and the {@link io.github.distlock.idempotency.Idempotent} advisor, on the core's
 * {@link LockTemplate} and an {@link IdempotencyStore}: the application's own, or the Redis one on the
 * {@link RedissonClient} bean (the one the Redis lock backend uses).
 *
 * <p>Fails closed as the core does: the advisor and the startup checks are registered whether or not a store exists,
 * so an {@code @Idempotent} method without one fails the startup, naming it; an application that uses none starts
 * with any backend.
 */
@AutoConfiguration(after = DistlockAutoConfiguration.class)
@ConditionalOnProperty(prefix = "distlock", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(IdempotencyProperties.class)
public final class IdempotencyAutoConfiguration {

    /** Registered first (member classes are), so the template's condition sees the store. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(RedissonClient.class)
    static class RedisStoreConfiguration {

        @Bean
        @ConditionalOnSingleCandidate(RedissonClient.class)
        @ConditionalOnMissingBean(IdempotencyStore.class)
        RedissonIdempotencyStore redissonIdempotencyStore(RedissonClient redisson) {
            return new RedissonIdempotencyStore(redisson);
        }
    }

    @Bean
    @ConditionalOnBean({ LockTemplate.class, IdempotencyStore.class })
    @ConditionalOnMissingBean
    IdempotencyTemplate idempotencyTemplate(LockTemplate locks, IdempotencyStore store,
            ObjectProvider<JsonMapper> json, IdempotencyProperties properties, Environment environment) {
        // the application's mapper (Spring Boot's, with its modules and settings): results replay as its MVC writes them
        boolean lockHeldUntilTransactionEnds = Binder.get(environment).bind("distlock.release-after-transaction",
                Boolean.class).orElse(true);
        return new IdempotencyTemplate(locks, store, json.getIfUnique(JsonMapper::shared), properties.getWaitTime(),
                lockHeldUntilTransactionEnds);
    }

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    static IdempotentOperationSource idempotentOperationSource(BeanFactory beanFactory, Environment environment) {
        // bound here, not injected: infrastructure beans are created before configuration properties beans
        IdempotencyProperties defaults = Binder.get(environment).bind("distlock.idempotency",
                IdempotencyProperties.class).orElseGet(IdempotencyProperties::new);
        return new IdempotentOperationSource(beanFactory, environment, defaults.getTtl());
    }

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    static IdempotentAdvisor idempotentAdvisor(ObjectProvider<IdempotentOperationSource> operations,
            ObjectProvider<IdempotencyTemplate> template, Environment environment) {
        IdempotentInterceptor interceptor = new IdempotentInterceptor(SingletonSupplier.of(operations::getObject),
                SingletonSupplier.of(template::getObject));
        // just outside the lock advisor (so outside @Transactional too): the mark is written after the commit, and a
        // replayed duplicate takes none of the method's locks
        int lockOrder = Binder.get(environment).bind("distlock.order", Integer.class)
                .orElse(DistlockProperties.DEFAULT_ORDER);
        return new IdempotentAdvisor(interceptor, Binder.get(environment).bind("distlock.idempotency.order",
                Integer.class).orElse(lockOrder - 1));
    }

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    static IdempotentMethodValidator idempotentMethodValidator(ObjectProvider<IdempotentOperationSource> operations,
            ListableBeanFactory beanFactory) {
        return new IdempotentMethodValidator(operations,
                () -> beanFactory.getBeanNamesForType(LockTemplate.class, true, false).length > 0,
                () -> beanFactory.getBeanNamesForType(IdempotencyStore.class, true, false).length > 0);
    }
}

package io.github.distlock.integration.autoconfigure;

import io.github.distlock.DistlockConfigurationException;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.integration.DistlockLockRegistry;
import io.github.distlock.spi.LockProvider;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * A {@link DistlockLockRegistry} bean when Spring Integration is on the class path, a distlock {@link LockTemplate}
 * exists and the application defines no {@link LockRegistry} of its own; off with
 * {@code distlock.integration.lock-registry.enabled=false}.
 */
@AutoConfiguration(after = DistlockAutoConfiguration.class)
@ConditionalOnClass(LockRegistry.class)
@ConditionalOnProperty(prefix = "distlock", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(DistlockIntegrationProperties.class)
public final class DistlockIntegrationAutoConfiguration {

    @Bean
    @ConditionalOnBean(LockTemplate.class)
    @ConditionalOnMissingBean(LockRegistry.class)
    @ConditionalOnProperty(prefix = "distlock.integration.lock-registry", name = "enabled", havingValue = "true",
            matchIfMissing = true)
    DistlockLockRegistry distlockLockRegistry(LockTemplate template, ObjectProvider<LockProvider> providers,
            DistlockIntegrationProperties properties) {
        DistlockIntegrationProperties.LockRegistry settings = properties.getLockRegistry();
        LockProvider provider = providers.getIfUnique();
        boolean backendFences = provider != null && provider.supports(LockType.REENTRANT, true);
        Boolean fenced = settings.getFenced();
        if (Boolean.TRUE.equals(fenced) && !backendFences) {
            throw new DistlockConfigurationException("distlock.integration.lock-registry.fenced is true, but the lock "
                    + "backend (" + ((provider != null) ? provider.getClass().getName() : "unknown: no single "
                    + "LockProvider bean") + ") takes no fenced locks.",
                    "Remove distlock.integration.lock-registry.fenced or set it to false.", null);
        }
        return new DistlockLockRegistry(template, settings.getKeyPrefix(),
                (fenced != null) ? fenced : backendFences);
    }
}

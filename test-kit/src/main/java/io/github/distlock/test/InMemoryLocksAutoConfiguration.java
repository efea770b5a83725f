package io.github.distlock.test;

import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.autoconfigure.DistlockProperties;
import io.github.distlock.spi.LockProvider;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigureOrder;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;

/**
 * The {@link InMemoryLockProvider} of {@link AutoConfigureInMemoryLocks}; imported by that annotation only. Ordered
 * first, before every backend's auto-configuration (each builds no client when a {@link LockProvider} exists) and
 * before distlock's own, which then uses no backend candidate: a backend configured anyway (a {@code DataSource} for
 * the JDBC one) is left unused. No backend is named: the test kit knows none of them.
 */
@AutoConfiguration(before = DistlockAutoConfiguration.class)
@AutoConfigureOrder(Ordered.HIGHEST_PRECEDENCE)
@EnableConfigurationProperties(DistlockProperties.class)
public final class InMemoryLocksAutoConfiguration {

    private static final Log logger = LogFactory.getLog(InMemoryLocksAutoConfiguration.class);

    /** Watchdog locks of a holder that {@linkplain InMemoryLockProvider#abandon abandoned} them live as configured. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(LockProvider.class)
    InMemoryLockProvider inMemoryLockProvider(DistlockProperties properties) {
        logger.info("distlock runs on in-memory locks (@AutoConfigureInMemoryLocks): they exclude callers in this JVM "
                + "only; for tests");
        return new InMemoryLockProvider(properties.getWatchdogTimeout());
    }
}

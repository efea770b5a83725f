package io.github.distlock.autoconfigure;

import io.github.distlock.metrics.MicrometerLockListener;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * Lock metrics ({@code distlock.acquire}, {@code distlock.held}) when the application has a Micrometer registry.
 */
@AutoConfiguration(before = DistlockAutoConfiguration.class, afterName = {
        "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration"})
@ConditionalOnClass(MeterRegistry.class)
@ConditionalOnBean(MeterRegistry.class)
@ConditionalOnProperty(prefix = "distlock", name = "enabled", havingValue = "true", matchIfMissing = true)
public final class DistlockMetricsAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    MicrometerLockListener micrometerLockListener(MeterRegistry registry) {
        return new MicrometerLockListener(registry);
    }
}

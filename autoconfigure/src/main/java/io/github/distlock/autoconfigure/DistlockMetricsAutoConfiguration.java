package io.github.distlock.autoconfigure;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LockTemplate;
import io.github.distlock.metrics.MicrometerLockListener;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * Lock metrics when the application has a Micrometer registry: the timers {@code distlock.acquire} (wait) and
 * {@code distlock.held} (hold), and the gauges {@code distlock.locks.held} (keys held through this instance's template)
 * and {@code distlock.locks.waiting} (calls waiting). With an {@code ObservationRegistry} as well, each call is also a
 * {@code distlock.lock} observation (see {@link DistlockAutoConfiguration}), from which Micrometer derives a timer of
 * the whole call.
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

    /** Gauges read on each scrape by walking the template's calls in progress; nothing is counted per call. */
    @Bean
    @ConditionalOnMissingBean(name = "distlockActiveLocksMeterBinder")
    MeterBinder distlockActiveLocksMeterBinder(ObjectProvider<LockTemplate> template) {
        return registry -> {
            if (template.getIfUnique() instanceof DefaultLockTemplate defaultTemplate) {
                Gauge.builder("distlock.locks.held", defaultTemplate, DefaultLockTemplate::heldLockCount)
                        .description("Lock keys held through this instance's LockTemplate").register(registry);
                Gauge.builder("distlock.locks.waiting", defaultTemplate, DefaultLockTemplate::waitingCallCount)
                        .description("Lock calls of this instance waiting for their locks").register(registry);
            }
        };
    }
}

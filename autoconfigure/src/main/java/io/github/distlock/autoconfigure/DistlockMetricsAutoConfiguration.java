package io.github.distlock.autoconfigure;

import io.github.distlock.LockActivity;
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

    /**
     * Gauges read on each scrape by walking the template's calls in progress ({@link LockActivity}); nothing is counted
     * per call. An application's own template that is no {@code LockActivity} gets no gauges.
     */
    @Bean
    @ConditionalOnMissingBean(name = "distlockActiveLocksMeterBinder")
    MeterBinder distlockActiveLocksMeterBinder(ObjectProvider<LockTemplate> template,
            ObjectProvider<LockActivity> activity) {
        return registry -> {
            // the template first: one declared as a LockTemplate is only matched as a LockActivity by its instance
            template.getIfUnique();
            LockActivity calls = activity.getIfUnique();
            if (calls != null) {
                Gauge.builder("distlock.locks.held", calls, LockActivity::heldLockCount)
                        .description("Lock keys held through this instance's LockTemplate").register(registry);
                Gauge.builder("distlock.locks.waiting", calls, LockActivity::waitingCallCount)
                        .description("Lock calls of this instance waiting for their locks").register(registry);
            }
        };
    }
}

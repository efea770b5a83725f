package io.github.distlock.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LockActivity;
import io.github.distlock.LockTemplate;
import io.github.distlock.actuate.DistlockEndpoint;
import io.github.distlock.spi.LockProvider;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The endpoint, the health indicator and the gauges read the calls in progress through the {@link LockActivity} bean:
 * the auto-configured template is one, and so is an application's own {@link DefaultLockTemplate} declared only as a
 * {@link LockTemplate}.
 */
class LockActivityIsWhatTheReadersSeeTest {

    /** A backend that never grants (no lock is taken here). */
    private static final LockProvider PLAIN = request -> CompletableFuture.completedFuture(null);

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DistlockMetricsAutoConfiguration.class,
                    DistlockAutoConfiguration.class, DistlockActuatorAutoConfiguration.class))
            .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
            .withBean(LockProvider.class, () -> PLAIN)
            .withPropertyValues("management.endpoints.web.exposure.include=distlock");

    @Test
    void theAutoConfiguredTemplateIsTheLockActivityEveryReaderCounts() {
        runner.run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(LockActivity.class)).isSameAs(context.getBean(LockTemplate.class));
            assertReadersSeeTheActivity(context);
        });
    }

    @Test
    void aDefaultLockTemplateOfTheApplicationDeclaredAsALockTemplateIsReadToo() {
        runner.withBean(LockTemplate.class,
                () -> new DefaultLockTemplate(PLAIN, "lock:", Duration.ZERO, null, List.of())).run(context -> {
                    assertThat(context).hasNotFailed();
                    assertReadersSeeTheActivity(context);
                });
    }

    private static void assertReadersSeeTheActivity(AssertableApplicationContext context) {
        assertThat(context.getBean(DistlockEndpoint.class).locks(SecurityContext.NONE).tracked()).isTrue();
        assertThat(context.getBean("distlockHealthIndicator", HealthIndicator.class).health().getDetails())
                .containsEntry("heldLocks", 0).containsEntry("waitingCalls", 0);
        MeterRegistry registry = new SimpleMeterRegistry();
        context.getBean("distlockActiveLocksMeterBinder", MeterBinder.class).bindTo(registry);
        assertThat(registry.get("distlock.locks.held").gauge().value()).isZero();
        assertThat(registry.get("distlock.locks.waiting").gauge().value()).isZero();
    }
}

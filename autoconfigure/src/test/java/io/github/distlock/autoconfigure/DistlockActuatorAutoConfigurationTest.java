package io.github.distlock.autoconfigure;

import java.util.concurrent.CompletableFuture;

import io.github.distlock.actuate.DistlockEndpoint;
import io.github.distlock.actuate.DistlockEndpointWebExtension;
import io.github.distlock.actuate.RecentLeaseLosses;
import io.github.distlock.spi.LockProvider;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;

/** When the endpoint and the health indicator exist, and that an application without Actuator starts as before. */
class DistlockActuatorAutoConfigurationTest {

    /** A backend that can't be inspected or pinged; never grants (no lock is taken here). */
    private static final LockProvider PLAIN = request -> CompletableFuture.completedFuture(null);

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DistlockAutoConfiguration.class,
                    DistlockActuatorAutoConfiguration.class))
            .withBean(LockProvider.class, () -> PLAIN);

    @Test
    void anExposedEndpointAndTheHealthIndicatorAreThere() {
        runner.withPropertyValues("management.endpoints.web.exposure.include=distlock").run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(DistlockEndpoint.class)
                    .hasSingleBean(DistlockEndpointWebExtension.class).hasSingleBean(RecentLeaseLosses.class)
                    .hasBean("distlockHealthIndicator");
            HealthIndicator health = context.getBean("distlockHealthIndicator", HealthIndicator.class);
            // not a LockInspector: it can't be pinged, which is not the same as down
            assertThat(health.health().getStatus()).isEqualTo(Status.UNKNOWN);
            DistlockEndpoint.LocksDescriptor locks = context.getBean(DistlockEndpoint.class).locks(SecurityContext.NONE);
            assertThat(locks.held()).isEmpty();
            assertThat(locks.configuration().backend()).contains("LockProvider bean of the application");
            assertThat(context.getBean(DistlockEndpoint.class).lock(SecurityContext.NONE, new String[] {"k"}).note())
                    .contains("does not implement LockInspector");
        });
    }

    @Test
    void anEndpointThatIsNotExposedIsNotCreated() {
        runner.run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(DistlockEndpoint.class)
                .hasBean("distlockHealthIndicator"));
    }

    @Test
    void withoutActuatorOnTheClassPathTheApplicationStartsWithoutThem() {
        runner.withPropertyValues("management.endpoints.web.exposure.include=distlock")
                .withClassLoader(new FilteredClassLoader(Endpoint.class, HealthIndicator.class)).run(context ->
                        assertThat(context).hasNotFailed().doesNotHaveBean(DistlockEndpoint.class)
                                .doesNotHaveBean("distlockHealthIndicator").hasBean("lockTemplate"));
    }

    @Test
    void theHealthIndicatorCanBeSwitchedOffAsAnyOther() {
        runner.withPropertyValues("management.health.distlock.enabled=false").run(context ->
                assertThat(context).hasNotFailed().doesNotHaveBean("distlockHealthIndicator"));
    }

    @Test
    void distlockDisabledMeansNeither() {
        runner.withPropertyValues("distlock.enabled=false", "management.endpoints.web.exposure.include=distlock")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(DistlockEndpoint.class)
                        .doesNotHaveBean("distlockHealthIndicator"));
    }
}

package io.github.distlock.autoconfigure;

import java.util.List;

import io.github.distlock.LockActivity;
import io.github.distlock.LockTemplate;
import io.github.distlock.actuate.DistlockEndpoint;
import io.github.distlock.actuate.DistlockEndpointWebExtension;
import io.github.distlock.actuate.DistlockHealthIndicator;
import io.github.distlock.actuate.RecentLeaseLosses;
import io.github.distlock.spi.LockInstance;
import io.github.distlock.spi.LockProvider;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The actuator endpoint {@code distlock} and the health indicator {@code distlock}, each when its Actuator module is
 * on the class path (spring-boot-actuator-autoconfigure, spring-boot-health) and a lock backend is in use.
 *
 * <p>The endpoint publishes every force release as Spring Boot's audit event through the application context: Boot's
 * {@code AuditListener} stores it when the application has an {@code AuditEventRepository}; without one it goes
 * nowhere.
 *
 * <p>Both read the calls in progress through the {@link LockActivity} bean. They take the {@link LockTemplate} as
 * well, unused, so that it exists before the activity is looked up: an application's own template declared as a
 * {@code LockTemplate} is only matched as a {@code LockActivity} by its instance, not by its declared type.
 */
@AutoConfiguration(after = DistlockAutoConfiguration.class)
@ConditionalOnProperty(prefix = "distlock", name = "enabled", havingValue = "true", matchIfMissing = true)
public final class DistlockActuatorAutoConfiguration {

    /** The endpoint: present when Actuator is and the endpoint is enabled and exposed. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"org.springframework.boot.actuate.endpoint.annotation.Endpoint",
            "org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint"})
    @EnableConfigurationProperties(DistlockEndpointProperties.class)
    static class EndpointConfiguration {

        @Bean
        @ConditionalOnMissingBean
        @ConditionalOnBean({LockTemplate.class, LockProvider.class})
        @ConditionalOnAvailableEndpoint(DistlockEndpoint.class)
        DistlockEndpoint distlockEndpoint(LockTemplate template, ObjectProvider<LockActivity> activity,
                LockProvider provider, ObjectProvider<LockInstance> self, DistlockProperties properties,
                DistlockEndpointProperties endpointProperties, ObjectProvider<DistlockBackend> backends,
                ApplicationEventPublisher events) {
            return new DistlockEndpoint(activity.getIfUnique(), provider, self.getIfUnique(), properties,
                    backendInUse(backends.orderedStream().toList(), properties, provider),
                    endpointProperties.getShowValues(), endpointProperties.getRoles(), events);
        }

        @Bean
        @ConditionalOnMissingBean
        @ConditionalOnBean(DistlockEndpoint.class)
        @ConditionalOnClass(name = "org.springframework.boot.actuate.endpoint.web.annotation.EndpointWebExtension")
        DistlockEndpointWebExtension distlockEndpointWebExtension(DistlockEndpoint endpoint) {
            return new DistlockEndpointWebExtension(endpoint);
        }

        /** The backend as the startup report names it; an application's own provider is named by its class. */
        private static String backendInUse(List<DistlockBackend> backends, DistlockProperties properties,
                LockProvider provider) {
            for (DistlockBackend backend : backends) {
                if (backends.size() == 1 || backend.isNamed(properties.getBackend())) {
                    return backend.toString();
                }
            }
            return "LockProvider bean of the application (" + provider.getClass().getName() + ")";
        }
    }

    /** The health indicator: present when Actuator's health module is and {@code management.health.distlock.enabled}. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"org.springframework.boot.health.contributor.HealthIndicator",
            "org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator"})
    @ConditionalOnEnabledHealthIndicator("distlock")
    static class HealthConfiguration {

        @Bean
        @ConditionalOnMissingBean
        RecentLeaseLosses distlockRecentLeaseLosses(DistlockProperties properties) {
            return new RecentLeaseLosses(properties.getHealth().getRecentLeaseLosses());
        }

        @Bean
        @ConditionalOnMissingBean(name = "distlockHealthIndicator")
        @ConditionalOnBean({LockTemplate.class, LockProvider.class})
        HealthIndicator distlockHealthIndicator(LockProvider provider, LockTemplate template,
                ObjectProvider<LockActivity> activity, RecentLeaseLosses leaseLosses, DistlockProperties properties) {
            return new DistlockHealthIndicator(provider, activity.getIfUnique(), leaseLosses,
                    properties.getHealth().getTimeout());
        }
    }
}

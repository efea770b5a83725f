package io.github.distlock.etcd.autoconfigure;

import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.etcd.EtcdLockProvider;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code distlock.etcd.endpoints} is a list, and YAML writes lists as indexed properties
 * ({@code endpoints[0]}, {@code endpoints[1]}); {@code @ConditionalOnProperty(name = "endpoints")} does not see those,
 * so the backend was not configured (the application started without it, or with another backend). Fixed with a
 * condition that binds the list.
 */
class EndpointsWrittenAsAYamlListConfigureTheBackendTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class, DistlockEtcdAutoConfiguration.class,
                    DistlockAutoConfiguration.class));

    @Test
    void endpointsWrittenAsAYamlListConfigureTheBackend() {
        // no server needed: the client connects on first use
        runner.withPropertyValues("distlock.etcd.endpoints[0]=http://127.0.0.1:1", "distlock.etcd.endpoints[1]=http://127.0.0.1:2")
                .run(context -> assertThat(context).hasNotFailed().hasSingleBean(EtcdLockProvider.class));
    }
}

package io.github.distlock.starter.etcd;

import io.github.distlock.LockTemplate;
import io.github.distlock.etcd.EtcdLockProvider;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.testsupport.EtcdServer;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.health.actuate.endpoint.HealthEndpoint;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.util.ClassUtils;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An application on {@code distlock-spring-boot-starter-etcd} alone, with Actuator, started against a real
 * etcd server (test-support's EtcdServer) with nothing but its endpoint: the etcd backend is the one in use, health
 * is UP, a lock call runs, and nothing of Redis is on the class path.
 */
class EtcdStarterAloneIsUpTest {

    @Test
    void anApplicationOnTheEtcdStarterAloneIsUp() throws Exception {
        assertThat(ClassUtils.isPresent("org.redisson.api.RedissonClient", null)).as("Redisson").isFalse();
        assertThat(ClassUtils.isPresent("org.springframework.data.redis.connection.RedisConnectionFactory", null))
                .as("Spring Data Redis").isFalse();
        try (EtcdServer etcd = EtcdServer.start();
                ConfigurableApplicationContext application = new SpringApplicationBuilder(Application.class)
                        .web(WebApplicationType.NONE)
                        .run("--distlock.etcd.endpoints=" + etcd.endpoint())) {
            assertThat(application.getBean(LockProvider.class)).isInstanceOf(EtcdLockProvider.class);
            assertThat(application.getBean("distlockHealthIndicator", HealthIndicator.class).health().getStatus())
                    .isEqualTo(Status.UP);
            assertThat(application.getBean(HealthEndpoint.class).health().getStatus()).isEqualTo(Status.UP);
            assertThat(application.getBean(LockTemplate.class).execute("starter", () -> "ran")).isEqualTo("ran");
        }
    }

    @SpringBootApplication
    static class Application {
    }
}

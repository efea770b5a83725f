package io.github.distlock.starter.zookeeper;

import io.github.distlock.LockTemplate;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.zookeeper.ZooKeeperLockProvider;
import org.apache.curator.test.TestingServer;
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
 * An application on {@code distlock-spring-boot-starter-zookeeper} alone, with Actuator, started against a real
 * ZooKeeper server (curator-test) with nothing but its connect string: the ZooKeeper backend is the one in use, health
 * is UP, a lock call runs, and nothing of Redis is on the class path.
 */
class ZooKeeperStarterAloneIsUpTest {

    @Test
    void anApplicationOnTheZooKeeperStarterAloneIsUp() throws Exception {
        assertThat(ClassUtils.isPresent("org.redisson.api.RedissonClient", null)).as("Redisson").isFalse();
        assertThat(ClassUtils.isPresent("org.springframework.data.redis.connection.RedisConnectionFactory", null))
                .as("Spring Data Redis").isFalse();
        try (TestingServer zookeeper = new TestingServer(true);
                ConfigurableApplicationContext application = new SpringApplicationBuilder(Application.class)
                        .web(WebApplicationType.NONE)
                        .run("--distlock.zookeeper.connect-string=" + zookeeper.getConnectString())) {
            assertThat(application.getBean(LockProvider.class)).isInstanceOf(ZooKeeperLockProvider.class);
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

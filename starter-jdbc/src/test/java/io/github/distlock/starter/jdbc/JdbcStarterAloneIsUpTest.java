package io.github.distlock.starter.jdbc;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Arrays;

import com.jayway.jsonpath.JsonPath;
import io.github.distlock.LockTemplate;
import io.github.distlock.jdbc.JdbcLockProvider;
import io.github.distlock.spi.LockProvider;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.EnumerablePropertySource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.util.ClassUtils;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An application on {@code distlock-spring-boot-starter-jdbc} alone, with an H2 {@code DataSource} and Actuator, and no
 * {@code management.health.*} nor {@code distlock.backend} setting: {@code /actuator/health} is UP, the distlock
 * component with it, the locks live in the application's database, and nothing of Redis is on the class path.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "spring.datasource.url=jdbc:h2:mem:starter-jdbc;DB_CLOSE_DELAY=-1",
        "management.endpoint.health.show-components=always"})
class JdbcStarterAloneIsUpTest {

    @LocalServerPort
    private int port;

    @Autowired
    private LockProvider provider;

    @Autowired
    private LockTemplate locks;

    @Autowired
    private JdbcTemplate database;

    @Autowired
    private ConfigurableEnvironment environment;

    @Test
    void anApplicationOnTheJdbcStarterAloneIsUpAndLocksInItsDatabase() throws Exception {
        assertThat(ClassUtils.isPresent("org.redisson.api.RedissonClient", null)).as("Redisson").isFalse();
        assertThat(ClassUtils.isPresent("org.springframework.data.redis.connection.RedisConnectionFactory", null))
                .as("Spring Data Redis").isFalse();
        assertThat(environment.getPropertySources().stream().filter(EnumerablePropertySource.class::isInstance)
                .flatMap(source -> Arrays.stream(((EnumerablePropertySource<?>) source).getPropertyNames()))
                .filter(name -> name.startsWith("management.health.") || name.equals("distlock.backend")))
                .as("settings the application did not need").isEmpty();
        assertThat(provider).isInstanceOf(JdbcLockProvider.class);

        HttpResponse<String> health = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://localhost:" + port + "/actuator/health")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(health.statusCode()).as(health.body()).isEqualTo(200);
        assertThat(JsonPath.<String>read(health.body(), "$.status")).isEqualTo("UP");
        assertThat(JsonPath.<String>read(health.body(), "$.components.distlock.status")).as(health.body())
                .isEqualTo("UP");

        String owner = locks.execute("starter", () -> database.queryForObject(
                "SELECT owner FROM distlock_lock WHERE lock_key = ?", String.class, "lock:starter"));
        assertThat(owner).as("the lock's row while the call runs").isNotBlank();
    }

    @SpringBootApplication
    static class Application {
    }
}

package io.github.distlock.actuate;

import java.time.Duration;

import com.jayway.jsonpath.JsonPath;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.testsupport.RedisServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The health indicator over HTTP on a redis-server this test stops and starts again: UP, DOWN within the configured
 * timeout, UP again; never in the readiness group (a Redis blip must not take every instance out of the load balancer
 * at once).
 */
class DistlockHealthTest {

    private static final Duration TIMEOUT = Duration.ofMillis(500);

    static RedisServer redis;
    static WebApp app;

    @BeforeAll
    static void start() {
        redis = RedisServer.start();
        app = WebApp.start("spring.data.redis.host=" + redis.host(), "spring.data.redis.port=" + redis.port(),
                "distlock.health.timeout=" + TIMEOUT.toMillis() + "ms", "management.endpoint.health.show-details=always",
                // Redisson's default retry budget: a ping left to it would take 6-13 s to fail against a stopped Redis
                "management.endpoint.health.probes.enabled=true");
    }

    @AfterAll
    static void stop() {
        if (app != null) {
            app.close();
        }
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void upWithRedisDownWithinTheTimeoutWithoutItAndUpAgainWhenItIsBack() {
        await().atMost(Duration.ofSeconds(20)).until(() -> app.get("/actuator/health/distlock").status() == 200);
        app.bean(LockTemplate.class).run("health:probe", LockOptions.DEFAULTS, () -> {
            WebApp.Response holding = app.get("/actuator/health/distlock");
            assertThat(JsonPath.<Integer>read(holding.body(), "$.details.heldLocks")).isEqualTo(1);
        });
        WebApp.Response up = app.get("/actuator/health/distlock");
        assertThat(JsonPath.<String>read(up.body(), "$.status")).isEqualTo("UP");
        assertThat(JsonPath.<Integer>read(up.body(), "$.details.heldLocks")).isZero();
        assertThat(JsonPath.<Integer>read(up.body(), "$.details.recentLeaseLosses")).isZero();

        redis.stop();
        long askedAt = System.nanoTime();
        WebApp.Response down = app.get("/actuator/health/distlock");
        Duration took = Duration.ofNanos(System.nanoTime() - askedAt);
        assertThat(down.status()).isEqualTo(503);
        assertThat(JsonPath.<String>read(down.body(), "$.status")).isEqualTo("DOWN");
        assertThat(JsonPath.<String>read(down.body(), "$.details.error")).contains("did not answer within 500 ms");
        // the timeout plus an HTTP round trip on a loaded machine; Redisson alone would take its retry budget (seconds)
        assertThat(took).isLessThan(TIMEOUT.plusMillis(1500));
        // the whole application is DOWN, yet ready: a Redis blip must not take every instance out of the load balancer
        assertThat(app.get("/actuator/health").status()).isEqualTo(503);
        WebApp.Response readiness = app.get("/actuator/health/readiness");
        assertThat(readiness.status()).isEqualTo(200);
        assertThat(readiness.body()).doesNotContain("distlock");
        assertThat(app.get("/actuator/health/liveness").status()).isEqualTo(200);

        redis.restart();
        await().atMost(Duration.ofSeconds(30)).until(() -> app.get("/actuator/health/distlock").status() == 200);
        assertThat(JsonPath.<String>read(app.get("/actuator/health/distlock").body(), "$.status")).isEqualTo("UP");
    }
}

package io.github.distlock.sample;

import java.time.Duration;

import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Redis stopped under a running instance: orders are refused with 503 and leave nothing behind; once Redis is back
 * the same instance takes orders again.
 */
class RedisOutageTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private final ShopClient client = new ShopClient();
    private InProcessApp app;

    @BeforeEach
    void start() {
        app = InProcessApp.start("--spring.data.redis.host=127.0.0.1", "--spring.data.redis.port=" + redis.port(),
                // short timeouts make the outage fail fast; see the report for how long a refusal takes
                "--spring.data.redis.timeout=500ms", "--spring.data.redis.connect-timeout=500ms");
    }

    @AfterEach
    void stop() {
        if (app != null) {
            app.close();
        }
        if (!redis.server().isRunning()) {
            redis.server().restart();
        }
    }

    @Test
    void whileRedisIsDownOrdersGet503AndNothingIsWrittenAndAfterwardsTheyWorkAgain() {
        long productId = newProduct(10);

        redis.server().stop();
        long start = System.nanoTime();
        ShopClient.Response refused = client.placeOrder(app.baseUrl(), "/api/orders", 2, productId, 1);
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        System.out.println("503 with Redis down took " + took.toMillis() + " ms");

        assertThat(refused.status()).isEqualTo(503);
        assertThat(refused.problemType()).isEqualTo("lock-backend-unavailable");
        assertThat(refused.json().path("key").asString()).isEqualTo("lock:order:2:" + productId);
        assertThat(refused.body()).doesNotContain("trace", "Exception", "at org.redisson");
        assertThat(ordersInDb(2, productId)).isZero();
        assertThat(stockInDb(productId)).isEqualTo(10);

        redis.server().restart();
        // Redisson reconnects on its own; retried submits meanwhile are 503s that write nothing
        ShopClient.Response placed = await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(250))
                .until(() -> client.placeOrder(app.baseUrl(), "/api/orders", 2, productId, 1),
                        response -> response.status() != 503);

        assertThat(placed.status()).isEqualTo(201);
        assertThat(ordersInDb(2, productId)).isEqualTo(1);
        assertThat(stockInDb(productId)).isEqualTo(9);
    }

    @Test
    void fencedStockWritesGoOnAfterRedisLostItsData() {
        long productId = newProduct(10);
        assertThat(client.placeOrder(app.baseUrl(), "/api/orders", 1, productId, 1).status()).isEqualTo(201);
        long tokenBefore = fenceTokenInDb(productId);

        // no persistence: the restarted server has lost the fencing counter; distlock seeds a new one from Redis's
        // clock, so the next token is still above the one the product row remembers
        redis.server().restart();
        ShopClient.Response placed = await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(250))
                .until(() -> client.placeOrder(app.baseUrl(), "/api/orders", 2, productId, 1),
                        response -> response.status() != 503);

        assertThat(placed.status()).isEqualTo(201);
        assertThat(ordersInDb(2, productId)).isEqualTo(1);
        assertThat(stockInDb(productId)).isEqualTo(8);
        assertThat(fenceTokenInDb(productId)).isGreaterThan(tokenBefore);
    }

    private long newProduct(int stock) {
        ShopClient.Response created = client.createProduct(app.baseUrl(), "test item", stock);
        assertThat(created.status()).isEqualTo(201);
        return created.json().path("id").asLong();
    }

    private int ordersInDb(long userId, long productId) {
        return app.jdbc().sql("SELECT COUNT(*) FROM orders WHERE user_id = ? AND product_id = ?")
                .params(userId, productId).query(Integer.class).single();
    }

    private long fenceTokenInDb(long productId) {
        return app.jdbc().sql("SELECT fence_token FROM product WHERE id = ?").param(productId).query(Long.class).single();
    }

    private int stockInDb(long productId) {
        return app.jdbc().sql("SELECT stock FROM product WHERE id = ?").param(productId).query(Integer.class).single();
    }
}

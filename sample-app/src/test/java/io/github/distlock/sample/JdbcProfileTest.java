package io.github.distlock.sample;

import io.github.distlock.LockType;
import io.github.distlock.jdbc.JdbcLockProvider;
import io.github.distlock.spi.LockProvider;
import org.junit.jupiter.api.Test;
import org.redisson.api.RedissonClient;

import static org.assertj.core.api.Assertions.assertThat;

/** The sample's "jdbc" profile: locks in its own H2 database, no Redis started, orders placed under the lock. */
class JdbcProfileTest {

    private final ShopClient client = new ShopClient();

    @Test
    void theJdbcProfileLocksInTheDatabaseWithoutRedis() {
        try (InProcessApp app = InProcessApp.start("--spring.profiles.active=jdbc")) {
            assertThat(app.context().getBean(LockProvider.class)).isInstanceOf(JdbcLockProvider.class);
            assertThat(app.context().getBeanNamesForType(RedissonClient.class)).isEmpty();
            assertThat(app.context().getBeanNamesForType(io.github.distlock.testsupport.RedisServer.class)).isEmpty();

            ShopClient.Response product = client.createProduct(app.baseUrl(), "jdbc profile item", 5);
            long productId = product.json().path("id").asLong();
            assertThat(client.placeOrder(app.baseUrl(), "/api/orders", 7, productId, 2).status()).isEqualTo(201);
            assertThat(client.placeOrder(app.baseUrl(), "/api/orders", 7, productId, 1).status()).isEqualTo(409);

            // an Idempotency-Key works without Redis too: its mark is a row of the shop's database
            ShopClient.Response keyed = client.post(app.baseUrl() + "/api/orders",
                    "{\"userId\":8,\"productId\":%d,\"quantity\":1}".formatted(productId), "Idempotency-Key", "k-8");
            ShopClient.Response retried = client.post(app.baseUrl() + "/api/orders",
                    "{\"userId\":8,\"productId\":%d,\"quantity\":1}".formatted(productId), "Idempotency-Key", "k-8");
            assertThat(keyed.status()).isEqualTo(201);
            assertThat(retried.status()).isEqualTo(201);
            assertThat(retried.body()).isEqualTo(keyed.body());
            assertThat(app.jdbc().sql("SELECT COUNT(*) FROM idempotency_mark WHERE mark_key = ?")
                    .param("lock:idempotent-mark:order-request:8:k-8").query(Long.class).single()).isEqualTo(1);

            // the order's and the product's locks were rows of the lock table, both released
            assertThat(app.jdbc().sql("SELECT COUNT(*) FROM distlock_lock WHERE lock_key IN (?, ?) AND owner IS NULL")
                    .params("lock:order:7:" + productId, "lock:product:" + productId).query(Long.class).single())
                    .isEqualTo(2);

            // no fair locks in the database: the product lock stays REENTRANT, and the sale of the last items (which
            // would close the key on Redis) still succeeds; a restock works as before
            assertThat(app.context().getBean(ProductLocks.class).sellOptions().type()).isEqualTo(LockType.REENTRANT);
            assertThat(client.placeOrder(app.baseUrl(), "/api/orders", 9, productId, 2).status()).isEqualTo(201);
            ShopClient.Response soldOut = client.placeOrder(app.baseUrl(), "/api/orders", 10, productId, 1);
            assertThat(soldOut.status()).isEqualTo(409);
            assertThat(soldOut.problemType()).isEqualTo("out-of-stock");
            ShopClient.Response restocked = client.post(app.baseUrl() + "/api/products/" + productId + "/restock",
                    "{\"quantity\":1}");
            assertThat(restocked.status()).isEqualTo(200);
            assertThat(restocked.json().path("stock").asInt()).isEqualTo(1);
        }
    }
}

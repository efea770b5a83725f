package io.github.distlock.sample;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

import io.github.distlock.LockTemplate;
import io.github.distlock.testsupport.RedisServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One instance of the sample, in this JVM, with no Redis configured (so on its embedded redis-server): concurrent
 * submits over real HTTP.
 */
class ConcurrentOrdersTest {

    private static final ShopClient client = new ShopClient();
    private static InProcessApp app;

    @BeforeAll
    static void start() {
        // buyers queue for the product lock; a slow CI machine must not turn waiting into lock-not-acquired
        app = InProcessApp.start("--distlock.wait-time=30s");
    }

    @AfterAll
    static void stop() {
        if (app != null) {
            app.close();
        }
    }

    @Test
    void concurrentDuplicateSubmitsCreateExactlyOneOrder() throws Exception {
        long productId = newProduct(1000);
        List<ShopClient.Response> responses = concurrently(50,
                i -> () -> client.placeOrder(app.baseUrl(), "/api/orders", 42, productId, 1));

        assertThat(responses).filteredOn(r -> r.status() == 201).hasSize(1);
        assertThat(responses).filteredOn(r -> r.status() == 409).hasSize(49)
                .allSatisfy(r -> assertThat(r.problemType()).isIn("lock-not-acquired", "duplicate-order"));
        assertThat(ordersInDb(42, productId)).isEqualTo(1);
        assertThat(stockInDb(productId)).isEqualTo(999);
    }

    @Test
    void aSubmitWhileTheSameOrderIsInProgressIsRejectedWith409NamingTheLockKey() {
        long productId = newProduct(10);
        // the test holds the order lock, as a first submit still running would
        ShopClient.Response response = app.context().getBean(LockTemplate.class).execute("order:7:" + productId,
                () -> client.placeOrder(app.baseUrl(), "/api/orders", 7, productId, 1));

        assertThat(response.status()).isEqualTo(409);
        assertThat(response.problemType()).isEqualTo("lock-not-acquired");
        assertThat(response.json().path("key").asString()).isEqualTo("lock:order:7:" + productId);
        assertThat(ordersInDb(7, productId)).isZero();
        assertThat(stockInDb(productId)).isEqualTo(10);
    }

    @Test
    void moreBuyersThanStockSellExactlyTheStock() throws Exception {
        long productId = newProduct(20);
        List<ShopClient.Response> responses = concurrently(60,
                i -> () -> client.placeOrder(app.baseUrl(), "/api/orders", 1000 + i, productId, 1));

        assertThat(responses).filteredOn(r -> r.status() == 201).hasSize(20);
        assertThat(responses).filteredOn(r -> r.status() == 409).hasSize(40)
                .allSatisfy(r -> assertThat(r.problemType()).isEqualTo("out-of-stock"));
        assertThat(app.jdbc().sql("SELECT COALESCE(SUM(quantity), 0) FROM orders WHERE product_id = ?")
                .param(productId).query(Integer.class).single()).isEqualTo(20);
        assertThat(stockInDb(productId)).isZero();
    }

    @Test
    void restockGoesThroughTheFencedProductLock() {
        long productId = newProduct(5);
        assertThat(client.placeOrder(app.baseUrl(), "/api/orders", 3, productId, 2).status()).isEqualTo(201);
        long tokenAfterSale = client.get(app.baseUrl() + "/api/products/" + productId).json().path("fenceToken").asLong();

        ShopClient.Response restocked = client.post(app.baseUrl() + "/api/products/" + productId + "/restock",
                "{\"quantity\":10}");

        assertThat(restocked.status()).isEqualTo(200);
        assertThat(restocked.json().path("stock").asInt()).isEqualTo(13);
        assertThat(restocked.json().path("sold").asInt()).isEqualTo(2);
        assertThat(restocked.json().path("fenceToken").asLong()).isGreaterThan(tokenAfterSale).isPositive();
    }

    @Test
    void invalidOrdersAre400ProblemDetailsWithoutInternals() {
        ShopClient.Response response = client.post(app.baseUrl() + "/api/orders",
                "{\"userId\":0,\"productId\":-1,\"quantity\":11}");

        assertThat(response.status()).isEqualTo(400);
        assertThat(response.problemType()).isEqualTo("invalid-request");
        assertThat(response.json().path("errors").propertyNames()).containsExactlyInAnyOrder("userId", "productId",
                "quantity");
        assertThat(response.body()).doesNotContain("trace", "Exception", "at io.github");

        ShopClient.Response malformed = client.post(app.baseUrl() + "/api/orders", "{not json");
        assertThat(malformed.status()).isEqualTo(400);
        assertThat(malformed.body()).doesNotContain("trace", "Exception", "at tools.jackson");
    }

    @Test
    void withNoRedisConfiguredTheAppRunsOnAnEmbeddedRedisServerAndStopsIt() {
        RedisServer embedded;
        try (InProcessApp second = InProcessApp.start()) {
            embedded = second.context().getBean("embeddedRedisServer", RedisServer.class);
            assertThat(embedded.isRunning()).isTrue();
            assertThat(second.context().getEnvironment().getProperty("spring.data.redis.port", Integer.class))
                    .isEqualTo(embedded.port());
            long productId = client.createProduct(second.baseUrl(), "x", 1).json().path("id").asLong();
            assertThat(client.placeOrder(second.baseUrl(), "/api/orders", 1, productId, 1).status()).isEqualTo(201);
        }
        assertThat(embedded.isRunning()).isFalse();
    }

    private static long newProduct(int stock) {
        ShopClient.Response created = client.createProduct(app.baseUrl(), "test item", stock);
        assertThat(created.status()).isEqualTo(201);
        return created.json().path("id").asLong();
    }

    private static int ordersInDb(long userId, long productId) {
        return app.jdbc().sql("SELECT COUNT(*) FROM orders WHERE user_id = ? AND product_id = ?")
                .params(userId, productId).query(Integer.class).single();
    }

    private static int stockInDb(long productId) {
        return app.jdbc().sql("SELECT stock FROM product WHERE id = ?").param(productId).query(Integer.class).single();
    }

    /** Runs {@code n} calls at once (released together by a latch) and returns their results, in order. */
    private static <T> List<T> concurrently(int n, IntFunction<Callable<T>> call) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            CountDownLatch ready = new CountDownLatch(n);
            CountDownLatch go = new CountDownLatch(1);
            List<Future<T>> futures = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Callable<T> task = call.apply(i);
                futures.add(pool.submit(() -> {
                    ready.countDown();
                    go.await();
                    return task.call();
                }));
            }
            assertThat(ready.await(10, TimeUnit.SECONDS)).isTrue();
            go.countDown();
            List<T> results = new ArrayList<>();
            for (Future<T> future : futures) {
                results.add(future.get(60, TimeUnit.SECONDS));
            }
            return results;
        }
        finally {
            pool.shutdownNow();
        }
    }
}

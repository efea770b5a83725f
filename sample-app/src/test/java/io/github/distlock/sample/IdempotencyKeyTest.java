package io.github.distlock.sample;

import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code Idempotency-Key} on {@code POST /api/orders} across three instances on one redis-server: 50 concurrent and
 * then 50 later submissions of one order with one key place exactly one order, and every answer is the same 201 with
 * the same body, byte for byte; the key with another body is a 422.
 */
class IdempotencyKeyTest extends MultiInstanceApps {

    private static final int CONCURRENT = 50;
    private static final int LATER = 50;

    private final ShopClient client = new ShopClient();
    @Test
    void retriesWithOneKeyAcrossInstancesPlaceOneOrderAndAllGetTheSameAnswer() throws Exception {
        ShopClient.Response product = client.createProduct(apps().get(0).baseUrl(), "idempotent item", 100);
        long productId = product.json().path("id").asLong();
        String key = UUID.randomUUID().toString();
        String body = "{\"userId\":4711,\"productId\":%d,\"quantity\":1}".formatted(productId);

        Map<String, Integer> answers = new TreeMap<>();
        ExecutorService pool = Executors.newFixedThreadPool(CONCURRENT);
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<ShopClient.Response>> concurrent = new ArrayList<>();
            for (int i = 0; i < CONCURRENT; i++) {
                String url = apps().get(i % INSTANCES).baseUrl() + "/api/orders";
                concurrent.add(pool.submit(() -> {
                    go.await();
                    return client.post(url, body, "Idempotency-Key", '"' + key + '"');
                }));
            }
            go.countDown();
            for (Future<ShopClient.Response> response : concurrent) {
                record(answers, response.get(60, TimeUnit.SECONDS));
            }
            // later: every first request has been answered, the lock is long released
            for (int i = 0; i < LATER; i++) {
                record(answers, client.post(apps().get(i % INSTANCES).baseUrl() + "/api/orders", body,
                        "Idempotency-Key", '"' + key + '"'));
            }
        }
        finally {
            pool.shutdownNow();
        }

        assertThat(answers).as("distinct answers (status, Location, body) and how often").hasSize(1);
        String answer = answers.keySet().iterator().next();
        assertThat(answer).startsWith("201 /api/orders/");
        assertThat(answers.values()).containsExactly(CONCURRENT + LATER);
        assertThat(ordersOf(4711, productId)).as("orders in the database").isEqualTo(1);
        assertThat(stockOf(productId)).isEqualTo(99);

        // the mark: in Redis, with about the configured day to live
        long ttl = ((Number) RespClient.callOnce(redis().port(), "PTTL", "lock:idempotent-mark:order-request:4711:" + key))
                .longValue();
        assertThat(ttl).isGreaterThan(23 * 3600_000L).isLessThanOrEqualTo(24 * 3600_000L);

        // the same key for another order: 422, nothing placed
        ShopClient.Response reused = client.post(apps().get(1).baseUrl() + "/api/orders",
                body.replace("\"quantity\":1", "\"quantity\":2"), "Idempotency-Key", '"' + key + '"');
        assertThat(reused.status()).isEqualTo(422);
        assertThat(reused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(reused.problemType()).isEqualTo("idempotency-key-reused");
        assertThat(ordersOf(4711, productId)).isEqualTo(1);

        // another user who happens to send the same key (a client library's bad random, a copied example) has a key
        // of their own: their order is placed, and neither sees the other's
        ShopClient.Response otherUser = client.post(apps().get(2).baseUrl() + "/api/orders",
                body.replace("4711", "4712"), "Idempotency-Key", '"' + key + '"');
        assertThat(otherUser.status()).isEqualTo(201);
        assertThat(otherUser.json().path("userId").asLong()).isEqualTo(4712);
        assertThat(otherUser.location()).isNotEqualTo(answer.split(" ")[1]);
        assertThat(ordersOf(4712, productId)).isEqualTo(1);
        assertThat(stockOf(productId)).isEqualTo(98);
    }

    private static void record(Map<String, Integer> answers, ShopClient.Response response) {
        answers.merge(response.status() + " " + response.location() + " " + response.body(), 1, Integer::sum);
    }

    private int ordersOf(long userId, long productId) throws Exception {
        try (Connection connection = connect(); var statement = connection.prepareStatement(
                "SELECT COUNT(*) FROM orders WHERE user_id = ? AND product_id = ?")) {
            statement.setLong(1, userId);
            statement.setLong(2, productId);
            try (var rows = statement.executeQuery()) {
                rows.next();
                return rows.getInt(1);
            }
        }
    }

    private int stockOf(long productId) throws Exception {
        try (Connection connection = connect(); var statement = connection.prepareStatement(
                "SELECT stock FROM product WHERE id = ?")) {
            statement.setLong(1, productId);
            try (var rows = statement.executeQuery()) {
                rows.next();
                return rows.getInt(1);
            }
        }
    }
}

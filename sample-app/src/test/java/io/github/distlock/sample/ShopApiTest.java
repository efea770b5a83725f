package io.github.distlock.sample;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import io.github.distlock.cache.SingleFlightCache;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.cache.CacheManager;
import org.springframework.data.redis.cache.RedisCacheManager;
import org.springframework.data.redis.core.StringRedisTemplate;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The shop's HTTP contract around the locked endpoint, on one instance in this JVM (on its embedded redis-server):
 * what a created order's {@code Location} answers, how a 400 names the fields at fault, and the lock metrics
 * Actuator serves.
 */
class ShopApiTest {

    private static final ShopClient client = new ShopClient();
    private static InProcessApp app;

    @BeforeAll
    static void start() {
        app = InProcessApp.start();
    }

    @AfterAll
    static void stop() {
        if (app != null) {
            app.close();
        }
    }

    @Test
    void theLocationOfACreatedOrderAnswersTheOrder() {
        long productId = newProduct(5);
        ShopClient.Response created = client.placeOrder(app.baseUrl(), "/api/orders", 11, productId, 2);
        assertThat(created.status()).isEqualTo(201);
        long orderId = created.json().path("id").asLong();
        assertThat(created.location()).isEqualTo("/api/orders/" + orderId);

        ShopClient.Response fetched = client.get(app.baseUrl() + created.location());

        assertThat(fetched.status()).isEqualTo(200);
        assertThat(fetched.json().path("id").asLong()).isEqualTo(orderId);
        assertThat(fetched.json().path("userId").asLong()).isEqualTo(11);
        assertThat(fetched.json().path("productId").asLong()).isEqualTo(productId);
        assertThat(fetched.json().path("quantity").asInt()).isEqualTo(2);
        // the row in the database, not an echo of the POST's answer
        assertThat(fetched.json().path("createdAt").asString()).isEqualTo(created.json().path("createdAt").asString());
        assertThat(app.jdbc().sql("SELECT user_id FROM orders WHERE id = ?").param(orderId).query(Long.class).single())
                .isEqualTo(11L);
    }

    @Test
    void anUnknownOrderIsA404ProblemDetail() {
        ShopClient.Response missing = client.get(app.baseUrl() + "/api/orders/987654321");

        assertThat(missing.status()).isEqualTo(404);
        assertThat(missing.problemType()).isEqualTo("order-not-found");
        assertThat(missing.headers().firstValue("Content-Type")).hasValueSatisfying(
                type -> assertThat(type).startsWith("application/problem+json"));
    }

    @Test
    void anUnreadableFieldIsNamedWithTheKindOfValueExpected() {
        long productId = newProduct(5);
        ShopClient.Response response = client.post(app.baseUrl() + "/api/orders",
                "{\"userId\":\"abc\",\"productId\":" + productId + ",\"quantity\":1}");

        assertThat(response.status()).isEqualTo(400);
        assertThat(response.problemType()).isEqualTo("invalid-request");
        assertThat(errors(response)).containsExactly(Map.entry("userId", "must be a whole number, not a string"));
        assertThat(response.body()).doesNotContain("Exception", "java.lang", "tools.jackson", "abc");
        assertThat(ordersOf(productId)).isZero();
    }

    @Test
    void everyUnreadableAndInvalidFieldIsNamedInOneAnswer() {
        ShopClient.Response response = client.post(app.baseUrl() + "/api/orders",
                "{\"userId\":[1],\"productId\":-1,\"quantity\":99999999999}");

        assertThat(response.status()).isEqualTo(400);
        assertThat(errors(response)).containsOnly(
                Map.entry("userId", "must be a whole number, not an array"),
                Map.entry("productId", "must be greater than 0"),
                Map.entry("quantity", "must be a whole number from -2147483648 to 2147483647, not 99999999999"));

        ShopClient.Response missing = client.post(app.baseUrl() + "/api/orders", "{\"userId\":true,\"quantity\":11}");
        assertThat(errors(missing)).containsOnly(
                Map.entry("userId", "must be a whole number, not a boolean"),
                Map.entry("productId", "must not be null"),
                Map.entry("quantity", "must be less than or equal to 10"));
    }

    @Test
    void aBodyThatIsNotAJsonObjectIsSaidToBeOne() {
        ShopClient.Response malformed = client.post(app.baseUrl() + "/api/orders", "{\"userId\":1,");
        assertThat(malformed.status()).isEqualTo(400);
        assertThat(malformed.json().path("detail").asString()).isEqualTo("The request body is not valid JSON.");
        assertThat(errors(malformed)).isEmpty();

        ShopClient.Response array = client.post(app.baseUrl() + "/api/orders", "[1, 2, 3]");
        assertThat(array.status()).isEqualTo(400);
        assertThat(array.json().path("detail").asString())
                .isEqualTo("The request body must be a JSON object with the documented fields.");
        assertThat(malformed.body() + array.body()).doesNotContain("Exception", "tools.jackson", "at io.github");
    }

    @Test
    void invalidParametersAreNamedToo() {
        assertThat(errors(client.get(app.baseUrl() + "/api/orders?userId=abc")))
                .containsExactly(Map.entry("userId", "must be a whole number"));
        assertThat(errors(client.get(app.baseUrl() + "/api/orders?userId=0")))
                .containsExactly(Map.entry("userId", "must be greater than 0"));
        assertThat(errors(client.get(app.baseUrl() + "/api/orders")))
                .containsExactly(Map.entry("userId", "is required"));
        ShopClient.Response badId = client.get(app.baseUrl() + "/api/orders/abc");
        assertThat(badId.status()).isEqualTo(400);
        assertThat(errors(badId)).containsExactly(Map.entry("id", "must be a whole number"));
    }

    /** An Idempotency-Key the shop cannot lock on (a brace opens a hash tag on Redis) is a 400 naming the header. */
    @Test
    void anIdempotencyKeyWithBracesIsA400NamingTheHeader() {
        for (String key : List.of("{", "{}", "a{b}c")) {
            ShopClient.Response response = client.post(app.baseUrl() + "/api/orders",
                    "{\"userId\":31,\"productId\":1,\"quantity\":1}", "Idempotency-Key", '"' + key + '"');
            assertThat(response.status()).as(key).isEqualTo(400);
            assertThat(errors(response)).as(key).containsExactly(Map.entry("Idempotency-Key",
                    "must be visible ASCII characters without quotes, backslashes or braces (a UUID, say)"));
        }
    }

    @Test
    void actuatorServesTheLockTimers() {
        double acquiredBefore = timerCount("distlock.acquire", "result:acquired");
        double releasedBefore = timerCount("distlock.held", "result:released");

        long productId = newProduct(5);
        assertThat(client.placeOrder(app.baseUrl(), "/api/orders", 21, productId, 1).status()).isEqualTo(201);

        ShopClient.Response acquire = client.get(app.baseUrl() + "/actuator/metrics/distlock.acquire");
        assertThat(acquire.status()).isEqualTo(200);
        assertThat(acquire.json().path("name").asString()).isEqualTo("distlock.acquire");
        assertThat(acquire.json().path("baseUnit").asString()).isEqualTo("seconds");
        // one order takes two locks: the user's order lock and the product's stock lock
        assertThat(timerCount("distlock.acquire", "result:acquired")).isEqualTo(acquiredBefore + 2);
        assertThat(timerCount("distlock.held", "result:released")).isEqualTo(releasedBefore + 2);

        ShopClient.Response health = client.get(app.baseUrl() + "/actuator/health");
        assertThat(health.status()).isEqualTo(200);
        assertThat(health.json().path("status").asString()).isEqualTo("UP");
        // only health, metrics and distlock are exposed
        assertThat(client.get(app.baseUrl() + "/actuator/env").status()).isEqualTo(404);
        assertThat(client.get(app.baseUrl() + "/actuator/distlock").status()).isEqualTo(200);
    }

    /** The COUNT of a timer with this tag, 0 when it has not recorded yet (Actuator then answers 404). */
    private static double timerCount(String name, String tag) {
        ShopClient.Response response = client.get(app.baseUrl() + "/actuator/metrics/" + name + "?tag=" + tag);
        if (response.status() == 404) {
            return 0;
        }
        assertThat(response.status()).isEqualTo(200);
        for (JsonNode measurement : response.json().path("measurements")) {
            if (measurement.path("statistic").asString().equals("COUNT")) {
                return measurement.path("value").asDouble();
            }
        }
        throw new AssertionError("No COUNT in " + response.body());
    }

    private static Map<String, String> errors(ShopClient.Response response) {
        assertThat(response.status()).isEqualTo(400);
        assertThat(response.problemType()).isEqualTo("invalid-request");
        Map<String, String> errors = new java.util.TreeMap<>();
        response.json().path("errors").properties().forEach(e -> errors.put(e.getKey(), e.getValue().asString()));
        return errors;
    }

    @Test
    void productDetailsAreCachedInRedisAndLoadedOnceWhileCallersWaitForTheLoad() throws Exception {
        assertThat(app.context().getBean(CacheManager.class)).isInstanceOf(RedisCacheManager.class);
        assertThat(app.context().getBean(CacheManager.class).getCache(ProductCacheConfiguration.PRODUCT_DETAILS))
                .isInstanceOf(SingleFlightCache.class);
        long productId = newProduct(5);
        ProductCatalog catalog = app.context().getBean(ProductCatalog.class);
        long loadsBefore = catalog.loads();

        List<CompletableFuture<ShopClient.Response>> visits = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(10);
        try {
            for (int i = 0; i < 10; i++) {
                visits.add(CompletableFuture.supplyAsync(
                        () -> client.get(app.baseUrl() + "/api/products/" + productId + "/details"), pool));
            }
            for (CompletableFuture<ShopClient.Response> visit : visits) {
                ShopClient.Response details = visit.get(30, TimeUnit.SECONDS);
                assertThat(details.status()).isEqualTo(200);
                assertThat(details.json().path("name").asString()).isEqualTo("test item");
            }
        }
        finally {
            pool.shutdownNow();
        }

        assertThat(catalog.loads() - loadsBefore).as("database reads of the details").isEqualTo(1);
        assertThat(app.context().getBean(StringRedisTemplate.class)
                .hasKey(ProductCacheConfiguration.PRODUCT_DETAILS + "::" + productId)).as("the entry in Redis").isTrue();
        assertThat(client.get(app.baseUrl() + "/api/products/987654321/details").status()).isEqualTo(404);
    }

    private static long newProduct(int stock) {
        ShopClient.Response created = client.createProduct(app.baseUrl(), "test item", stock);
        assertThat(created.status()).isEqualTo(201);
        return created.json().path("id").asLong();
    }

    private static int ordersOf(long productId) {
        return app.jdbc().sql("SELECT COUNT(*) FROM orders WHERE product_id = ?").param(productId)
                .query(Integer.class).single();
    }
}

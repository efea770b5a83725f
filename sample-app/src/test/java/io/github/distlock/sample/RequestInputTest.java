package io.github.distlock.sample;

import java.util.Map;
import java.util.TreeMap;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the README promises for input the shop cannot take, over real HTTP to the sample running in this JVM: a
 * decimal where a whole number belongs, a field the request does not have, and an {@code Idempotency-Key} too long
 * for the app or for Tomcat are each a 400 problem detail, never a silently changed order or an HTML page.
 */
class RequestInputTest {

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
    void aDecimalQuantityIsA400NamingTheFieldAndPlacesNoOrder() {
        long productId = newProduct(5);
        for (String quantity : new String[] { "1.5", "1.0", "1e0" }) {
            ShopClient.Response response = client.post(app.baseUrl() + "/api/orders",
                    "{\"userId\":41,\"productId\":" + productId + ",\"quantity\":" + quantity + "}");

            assertProblem(response, 400, "invalid-request", "The request body has invalid fields.");
            assertThat(errors(response)).as(quantity)
                    .containsExactly(Map.entry("quantity", "must be a whole number, not a decimal number"));
        }
        ShopClient.Response restock = client.post(app.baseUrl() + "/api/products/" + productId + "/restock",
                "{\"quantity\":2.5}");
        assertThat(errors(restock)).containsExactly(
                Map.entry("quantity", "must be a whole number, not a decimal number"));
        assertThat(ordersOf(productId)).isZero();
        assertThat(client.get(app.baseUrl() + "/api/products/" + productId).json().path("stock").asInt())
                .isEqualTo(5);
    }

    @Test
    void anUnknownFieldIsA400NamingTheFieldAndPlacesNoOrder() {
        long productId = newProduct(5);
        ShopClient.Response response = client.post(app.baseUrl() + "/api/orders",
                "{\"userId\":42,\"productId\":" + productId + ",\"quantity\":1,\"coupon\":\"FREE\"}");

        assertProblem(response, 400, "invalid-request", "The request body has invalid fields.");
        assertThat(errors(response)).containsExactly(Map.entry("coupon", "is not a field of this request"));
        assertThat(ordersOf(productId)).isZero();

        // a misspelt field is named with what else is wrong, in one answer
        ShopClient.Response misspelt = client.post(app.baseUrl() + "/api/orders",
                "{\"userId\":42,\"productId\":" + productId + ",\"quantty\":2}");
        assertThat(errors(misspelt)).containsOnly(Map.entry("quantty", "is not a field of this request"),
                Map.entry("quantity", "must not be null"));

        ShopClient.Response product = client.post(app.baseUrl() + "/api/products",
                "{\"name\":\"x\",\"stock\":1,\"price\":10}");
        assertThat(errors(product)).containsExactly(Map.entry("price", "is not a field of this request"));
    }

    @Test
    void bodiesOutsideTheShopApiAreReadAsBefore() {
        // the strict reading is for the shop's request records only: the flash-sale demo and Actuator are untouched
        ShopClient.Response health = client.get(app.baseUrl() + "/actuator/health");
        assertThat(health.status()).isEqualTo(200);
        assertThat(app.context().getBean(tools.jackson.databind.json.JsonMapper.class).isEnabled(
                tools.jackson.databind.DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)).isFalse();
    }

    @Test
    void aTwentyKilobyteIdempotencyKeyIsA400NamingTheHeader() {
        long productId = newProduct(5);
        ShopClient.Response response = client.post(app.baseUrl() + "/api/orders",
                "{\"userId\":43,\"productId\":" + productId + ",\"quantity\":1}", "Idempotency-Key",
                "\"" + "k".repeat(20 * 1024) + "\"");

        assertProblem(response, 400, "invalid-request", "The request has an invalid header.");
        assertThat(errors(response)).containsExactly(Map.entry("Idempotency-Key", "must be at most 255 characters"));
        assertThat(ordersOf(productId)).isZero();

        // the longest key taken: 255 characters
        ShopClient.Response longest = client.post(app.baseUrl() + "/api/orders",
                "{\"userId\":43,\"productId\":" + productId + ",\"quantity\":1}", "Idempotency-Key",
                "\"" + "k".repeat(255) + "\"");
        assertThat(longest.status()).isEqualTo(201);
    }

    @Test
    void headersBeyondWhatTomcatReadsAreStillAProblemDetail() {
        ShopClient.Response response = client.post(app.baseUrl() + "/api/orders",
                "{\"userId\":44,\"productId\":1,\"quantity\":1}", "Idempotency-Key",
                "\"" + "k".repeat(64 * 1024) + "\"");

        assertProblem(response, 400, "invalid-request", "The server refused the request before reading it "
                + "(request headers larger than it accepts, or a malformed request).");
        assertThat(response.json().path("title").asString()).isEqualTo("Bad Request");
        assertThat(response.body()).doesNotContain("<html", "Tomcat");
    }

    private static void assertProblem(ShopClient.Response response, int status, String type, String detail) {
        assertThat(response.status()).as(response.body()).isEqualTo(status);
        assertThat(response.headers().firstValue("Content-Type")).hasValueSatisfying(
                contentType -> assertThat(contentType).startsWith("application/problem+json"));
        assertThat(response.problemType()).isEqualTo(type);
        assertThat(response.json().path("status").asInt()).isEqualTo(status);
        assertThat(response.json().path("detail").asString()).isEqualTo(detail);
        assertThat(response.body()).doesNotContain("Exception", "tools.jackson", "java.lang");
    }

    private static Map<String, String> errors(ShopClient.Response response) {
        assertThat(response.status()).as(response.body()).isEqualTo(400);
        assertThat(response.problemType()).isEqualTo("invalid-request");
        Map<String, String> errors = new TreeMap<>();
        response.json().path("errors").properties().forEach(e -> errors.put(e.getKey(), e.getValue().asString()));
        return errors;
    }

    private static long newProduct(int stock) {
        ShopClient.Response created = client.createProduct(app.baseUrl(), "input test item", stock);
        assertThat(created.status()).isEqualTo(201);
        return created.json().path("id").asLong();
    }

    private static int ordersOf(long productId) {
        return app.jdbc().sql("SELECT COUNT(*) FROM orders WHERE product_id = ?").param(productId)
                .query(Integer.class).single();
    }
}

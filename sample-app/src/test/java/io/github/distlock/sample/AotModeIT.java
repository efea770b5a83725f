package io.github.distlock.sample;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The sample application after Spring AOT processing ({@code process-aot} in this module's build), started on the
 * JVM with {@code -Dspring.aot.enabled=true}: its context comes from the generated initializer, and an order is
 * placed under {@code @DistributedLock} (SpEL keys), stock is added under a {@code LockTemplate} lock, and distlock's
 * timers count those locks. Runs in the integration-test phase (failsafe), after process-aot has generated and compiled
 * the AOT sources into target/classes.
 */
class AotModeIT {

    @Test
    void theAotProcessedAppPlacesAnOrderUnderTheLock() throws Exception {
        ShopClient shop = new ShopClient();
        // no exposure arguments here: in AOT mode what is exposed was decided when the application was processed
        try (AppProcess app = AppProcess.launch("aot", Path.of("target", "aot-it"), List.of("-Dspring.aot.enabled=true"),
                List.of())) {
            app.awaitStarted(Duration.ofSeconds(120));
            // Spring Boot says so when the context comes from AOT-generated code
            assertThat(Files.readString(app.log())).contains("Starting AOT-processed SampleApplication");

            ShopClient.Response product = shop.createProduct(app.baseUrl(), "aot-widget", 3);
            assertThat(product.status()).isEqualTo(201);
            long productId = product.json().path("id").asLong();

            ShopClient.Response order = shop.placeOrder(app.baseUrl(), "/api/orders", 42, productId, 1);
            assertThat(order.status()).as(order.body()).isEqualTo(201);
            ShopClient.Response duplicate = shop.placeOrder(app.baseUrl(), "/api/orders", 42, productId, 1);
            assertThat(duplicate.status()).isEqualTo(409);
            assertThat(duplicate.problemType()).isEqualTo("duplicate-order");

            ShopClient.Response restocked = shop.post(app.baseUrl() + "/api/products/" + productId + "/restock",
                    "{\"quantity\":5}");
            assertThat(restocked.status()).as(restocked.body()).isEqualTo(200);
            assertThat(restocked.json().path("stock").asInt()).isEqualTo(7);

            // the locks were taken: the placed and the duplicate order took the order and product locks, the restock
            // the product lock through the template
            ShopClient.Response acquired = shop.get(app.baseUrl()
                    + "/actuator/metrics/distlock.acquire?tag=result:acquired");
            assertThat(acquired.status()).as(acquired.body()).isEqualTo(200);
            assertThat(acquired.json().path("measurements").path(0).path("value").asDouble()).isGreaterThanOrEqualTo(4.0);
            ShopClient.Response listed = shop.get(app.baseUrl() + "/actuator/distlock");
            assertThat(listed.status()).as(listed.body()).isEqualTo(200);
            assertThat(listed.json().path("configuration").path("backend").asString()).startsWith("redis");
        }
    }
}

package io.github.distlock.sample;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockKeyClosedException;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import io.github.distlock.sample.ProductLocks.ProductSoldOut;
import io.github.distlock.testsupport.RedisServerExtension;
import io.github.distlock.testsupport.RespClient;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.context.PayloadApplicationEvent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The end of a flash sale, on a real redis-server: the sale of the last item closes the product's lock key
 * ({@link ProductLocks}), so the buyers still queued for it are answered "out of stock" at once instead of each taking
 * the lock in turn to find nothing left; a restock reopens it.
 */
class SoldOutTest {

    private static final int BUYERS = 200;
    private static final int STOCK = 20;
    /**
     * How soon after the close the last queued buyer must have its 409, measured from the moment the closing sale
     * sent the close (server side, {@link ProductSoldOut#closingAt()}) to the moment the test's HTTP client received the
     * last answer, in this JVM on one clock: the close's round trip, the waiters' wake-up, and 180 responses through
     * Tomcat, Spring MVC and the JDK's HTTP client, all on the same CPUs.
     *
     * <p>A sanity bound, not the measurement: timing is measured, not asserted (a loaded CI machine must not turn a
     * correct close red). The goal is 100 ms; the test prints what each measured sale took, on a server warmed up by
     * {@link #WARM_UP_SALES} sales first (docs/performance.md has the numbers). What the close changes is asserted
     * exactly instead: every queued buyer was told by the close, and none of them took the product lock (without the
     * close each takes it in turn: the last answer then came ~775 ms after).
     */
    private static final Duration ANSWER_BOUND = Duration.ofSeconds(1);

    /**
     * Sales before the measured ones: a live shop's server has its refusal path compiled by the JIT; a fresh test JVM
     * has not. The last answer came 250–330 ms after the close in the first sale of a fresh JVM and settled at 80–95
     * ms from about the tenth (2,000 refusals) on, on this 2-core machine.
     */
    private static final int WARM_UP_SALES = 12;

    private static final int MEASURED_SALES = 3;

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private static final ShopClient client = new ShopClient();
    private static InProcessApp app;
    private static RespClient inspector;

    @BeforeAll
    static void start() {
        app = InProcessApp.start("--spring.data.redis.host=127.0.0.1", "--spring.data.redis.port=" + redis.port(),
                // the buyers queue for the product lock: a slow machine must not turn that into lock-not-acquired
                "--distlock.wait-time=30s",
                // every buyer waits on a request thread of its own (Tomcat's default is 200)
                "--server.tomcat.threads.max=" + (BUYERS + 20));
        inspector = RespClient.connect(redis.port(), Duration.ofSeconds(5));
    }

    @AfterAll
    static void stop() {
        if (inspector != null) {
            inspector.close();
        }
        if (app != null) {
            app.close();
        }
    }

    @Test
    void afterTheLastSaleTheBuyersStillQueuedAreToldOutOfStockAtOnceWithoutTakingTheLock() throws Exception {
        assertThat(app.context().getBean(ProductLocks.class).sellOptions().type()).isEqualTo(LockType.FAIR);
        long firstUser = 10_000;
        for (int i = 1; i <= WARM_UP_SALES; i++, firstUser += BUYERS) {
            QueuedSale warmUp = queuedSale(BUYERS, STOCK, firstUser);
            assertThat(warmUp.placed()).hasSize(STOCK);
            System.out.println("Warm-up sale " + i + ": " + warmUp.timing());
        }
        List<Long> lastAnswers = new ArrayList<>();
        for (int i = 1; i <= MEASURED_SALES; i++, firstUser += BUYERS) {
            QueuedSale sale = queuedSale(BUYERS, STOCK, firstUser);
            System.out.println("Measured sale " + i + ": " + sale.timing());
            assertClosedAndAnswered(sale);
            lastAnswers.add(sale.refusalsAfterCloseMicros().get(BUYERS - STOCK - 1));
        }
        System.out.println("MEASURED flash-sale close over HTTP: last of " + (BUYERS - STOCK)
                + " queued buyers answered " + lastAnswers.stream().map(us -> String.format("%.1f", us / 1e3)).toList()
                + " ms after the close, in " + MEASURED_SALES + " sales after " + WARM_UP_SALES + " warm-up sales");
        assertThat(lastAnswers).as("last refusal after the close, µs").allSatisfy(
                us -> assertThat(us).isLessThanOrEqualTo(ANSWER_BOUND.toNanos() / 1_000));
    }

    private void assertClosedAndAnswered(QueuedSale sale) {
        long productId = sale.productId();
        assertThat(sale.placed()).hasSize(STOCK);
        assertThat(sale.refused()).hasSize(BUYERS - STOCK).allSatisfy(r -> {
            assertThat(r.status()).isEqualTo(409);
            assertThat(r.problemType()).isEqualTo("out-of-stock");
            assertThat(r.json().path("productId").asLong()).isEqualTo(productId);
            assertThat(r.json().path("available").asInt()).isZero();
        });
        assertThat(app.jdbc().sql("SELECT COALESCE(SUM(quantity), 0) FROM orders WHERE product_id = ?")
                .param(productId).query(Integer.class).single()).as("items sold").isEqualTo(STOCK);
        assertThat(stockInDb(productId)).isZero();
        // the close told every buyer still queued, and the key stays closed
        assertThat(sale.closed().waitersTold()).isEqualTo(BUYERS - STOCK);
        assertThat(inspector.call("GET", "distlock_closed:{lock:product:" + productId + "}"))
                .isEqualTo(ProductLocks.SOLD_OUT);
        assertThat((Long) inspector.call("HLEN", waitersKey(productId))).isZero();
        // locks released: the test's, 200 order locks, 20 sales' product locks; none of the 180 took the product lock
        assertThat(sale.locksReleased()).isEqualTo(1 + BUYERS + STOCK);
        assertThat(sale.refusalsAfterCloseMicros().get(0)).as("first refusal after the close, µs").isPositive();
    }

    /**
     * A sale of {@code stock} items to {@code buyers} buyers (one each, users from {@code firstUser}), all queued for
     * the product lock before the first is served: the test holds the lock until the queue in Redis holds them all.
     */
    private static QueuedSale queuedSale(int buyers, int stock, long firstUser) throws Exception {
        long productId = newProduct(stock);
        ProductLocks productLocks = app.context().getBean(ProductLocks.class);
        CompletableFuture<ProductSoldOut> soldOut = new CompletableFuture<>();
        app.context().addApplicationListener(event -> {
            if (event instanceof PayloadApplicationEvent<?> payload && payload.getPayload() instanceof ProductSoldOut sale
                    && sale.productId() == productId) {
                soldOut.complete(sale);
            }
        });
        double releasedBefore = releasedLocks();
        ExecutorService threads = Executors.newFixedThreadPool(buyers + 1);
        try {
            CountDownLatch held = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            Future<?> holder = threads.submit(() -> app.context().getBean(LockTemplate.class)
                    .execute(ProductLocks.key(productId), productLocks.sellOptions(), () -> {
                        held.countDown();
                        return release.await(60, TimeUnit.SECONDS);
                    }));
            assertThat(held.await(10, TimeUnit.SECONDS)).isTrue();

            List<Future<ShopClient.Response>> orders = new ArrayList<>();
            for (int i = 0; i < buyers; i++) {
                long userId = firstUser + i;
                orders.add(threads.submit(() -> client.placeOrder(app.baseUrl(), "/api/orders", userId, productId, 1)));
            }
            await("all " + buyers + " buyers queued in " + waitersKey(productId)).atMost(Duration.ofSeconds(30))
                    .until(() -> (Long) inspector.call("HLEN", waitersKey(productId)), n -> n == buyers);
            release.countDown();
            holder.get(10, TimeUnit.SECONDS);

            List<ShopClient.Response> answers = new ArrayList<>();
            for (Future<ShopClient.Response> order : orders) {
                answers.add(order.get(60, TimeUnit.SECONDS));
            }
            return new QueuedSale(productId, answers.stream().filter(r -> r.status() == 201).toList(),
                    answers.stream().filter(r -> r.status() != 201).toList(), soldOut.get(10, TimeUnit.SECONDS),
                    releasedLocks() - releasedBefore);
        }
        finally {
            threads.shutdownNow();
        }
    }

    /** What a {@link #queuedSale} ended with. */
    private record QueuedSale(long productId, List<ShopClient.Response> placed, List<ShopClient.Response> refused,
            ProductSoldOut closed, double locksReleased) {

        /** When each refusal reached the client, in µs after the closing sale sent the close; sorted. */
        List<Long> refusalsAfterCloseMicros() {
            return refused.stream().map(r -> Duration.between(closed.closingAt(), r.receivedAt()).toNanos() / 1_000)
                    .sorted().toList();
        }

        String timing() {
            List<Long> after = refusalsAfterCloseMicros();
            Instant lastSale = placed.stream().map(ShopClient.Response::receivedAt).max(Comparator.naturalOrder())
                    .orElseThrow();
            return String.format("%d queued buyers told; their 409s reached the client %.1f / %.1f / %.1f / %.1f ms"
                    + " after the close was sent (min / p50 / p90 / max); the closing sale's 201 %.1f ms after it",
                    closed.waitersTold(), after.get(0) / 1e3, after.get(after.size() / 2) / 1e3,
                    after.get(after.size() * 9 / 10) / 1e3, after.get(after.size() - 1) / 1e3,
                    Duration.between(closed.closingAt(), lastSale).toNanos() / 1e6);
        }
    }

    private static String waitersKey(long productId) {
        return "distlock_waiters:{lock:product:" + productId + "}";
    }

    @Test
    void aSoldOutProductRefusesAtOnceUntilARestockReopensItsKey() {
        long productId = newProduct(1);
        assertThat(client.placeOrder(app.baseUrl(), "/api/orders", 1, productId, 1).status()).isEqualTo(201);
        String closedKey = "distlock_closed:{lock:product:" + productId + "}";
        assertThat(inspector.call("GET", closedKey)).isEqualTo(ProductLocks.SOLD_OUT);

        // past the order's check without a lock, the sale's lock itself is refused: the key is closed
        assertThatThrownBy(() -> app.context().getBean(StockService.class).sell(2, productId, 1))
                .isInstanceOf(OutOfStockException.class)
                .hasMessage("Product " + productId + " has 0 left, 1 requested")
                .cause().isInstanceOf(LockKeyClosedException.class)
                .hasMessage("Lock 'lock:product:" + productId + "' is closed: sold out");

        ShopClient.Response restocked = client.post(app.baseUrl() + "/api/products/" + productId + "/restock",
                "{\"quantity\":3}");
        assertThat(restocked.status()).isEqualTo(200);
        assertThat(restocked.json().path("stock").asInt()).isEqualTo(3);
        assertThat((Long) inspector.call("EXISTS", closedKey)).isZero();
        assertThat(client.placeOrder(app.baseUrl(), "/api/orders", 2, productId, 1).status()).isEqualTo(201);
        assertThat(stockInDb(productId)).isEqualTo(2);
    }

    @Test
    void aRestockQueuedWhenTheLastItemSellsReopensTheKeyAgainAndAddsItsStock() throws Exception {
        long productId = newProduct(0);
        ProductLocks productLocks = app.context().getBean(ProductLocks.class);
        LockTemplate locks = app.context().getBean(LockTemplate.class);
        String key = ProductLocks.key(productId);
        ExecutorService threads = Executors.newSingleThreadExecutor();
        try {
            // the test is the sale of the last item: it holds the lock while the restock reopens the key and queues,
            // then closes the key and releases, as the sale does after its commit
            ShopClient.Response restocked = locks.execute(key, productLocks.sellOptions(), () -> {
                Future<ShopClient.Response> restock = threads.submit(() -> client.post(
                        app.baseUrl() + "/api/products/" + productId + "/restock", "{\"quantity\":4}"));
                await("the restock queued").atMost(Duration.ofSeconds(10))
                        .until(() -> (Long) inspector.call("HLEN", waitersKey(productId)), n -> n == 1);
                assertThat(locks.closeKey(key, ProductLocks.SOLD_OUT)).isEqualTo(1);
                return restock;
            }).get(30, TimeUnit.SECONDS);

            assertThat(restocked.status()).isEqualTo(200);
            assertThat(restocked.json().path("stock").asInt()).isEqualTo(4);
            assertThat((Long) inspector.call("EXISTS", "distlock_closed:{lock:product:" + productId + "}")).isZero();
            assertThat(client.placeOrder(app.baseUrl(), "/api/orders", 3, productId, 1).status()).isEqualTo(201);
        }
        finally {
            threads.shutdownNow();
        }
    }

    /** Locks released since the start, every key (distlock's timer). */
    private static double releasedLocks() {
        return app.context().getBean(MeterRegistry.class).get("distlock.held").tag("result", "released").timer()
                .count();
    }

    private static long newProduct(int stock) {
        ShopClient.Response created = client.createProduct(app.baseUrl(), "sold-out test item", stock);
        assertThat(created.status()).isEqualTo(201);
        return created.json().path("id").asLong();
    }

    private static int stockInDb(long productId) {
        return app.jdbc().sql("SELECT stock FROM product WHERE id = ?").param(productId).query(Integer.class).single();
    }
}

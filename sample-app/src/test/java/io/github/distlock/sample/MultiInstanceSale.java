package io.github.distlock.sample;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Three instances of the sample ({@link MultiInstanceApps}), sharing one lock backend (a Redis server, a Redis
 * cluster, or the database itself: see the subclasses) and one database, take a flash sale: 200 users each submit 3 copies of an order for product A and 2 for product B (1,000
 * requests, a user's copies in flight together and on different instances), with 60 items of each in stock. The
 * database must show one order per user and product, and exactly the stock sold. The same traffic on the unsafe
 * endpoint must show duplicates or overselling, which is what makes the first half a test.
 */
abstract class MultiInstanceSale extends MultiInstanceApps {

    private static final int USERS = 200;
    private static final int STOCK = 60;
    private static final int COPIES_A = 3;
    private static final int COPIES_B = 2;
    private static final int CLIENT_THREADS = 48;
    private static final Duration LOAD_TIMEOUT = Duration.ofSeconds(120);

    private static final ShopClient client = new ShopClient();

    @Test
    void acrossInstancesTheLocksAllowOneOrderPerUserAndProductAndNoOverselling() throws Exception {
        Sale sale = runSale("/api/orders");

        assertThat(sale.statuses()).as("HTTP statuses").containsOnlyKeys(201, 409);
        assertThat(sale.duplicates()).as("(user, product) pairs with more than one order").isEmpty();
        for (long product : sale.products()) {
            int sold = sold(product);
            int stock = stock(product);
            assertThat(stock).as("stock of %d", product).isGreaterThanOrEqualTo(0);
            assertThat(sold + stock).as("sold + remaining of %d", product).isEqualTo(STOCK);
            // more buyers than stock and nobody gave up waiting: it sold out
            assertThat(sold).as("sold of %d", product).isEqualTo(STOCK);
        }
        assertThat(sale.statuses().get(201)).as("orders created").isEqualTo(2 * STOCK);
    }

    /** The same traffic on the unsafe endpoint: the control that makes the locked run a test. */
    void unsafeEndpointCreatesDuplicatesOrOversells() throws Exception {
        Sale sale = runSale("/api/unsafe/orders");

        int oversold = 0;
        int lostStock = 0;
        for (long product : sale.products()) {
            oversold += Math.max(0, sold(product) - STOCK);
            lostStock += Math.abs(sold(product) + stock(product) - STOCK);
        }
        System.out.printf("unsafe: %d duplicate pairs, %d items oversold, sold + remaining off by %d%n",
                sale.duplicates().size(), oversold, lostStock);
        assertThat(sale.duplicates().size() + oversold + lostStock).as("duplicates + oversold + inconsistency")
                .isPositive();
    }

    /** A sale's outcome: its products, HTTP status counts and the pairs the database has more than one order for. */
    private record Sale(List<Long> products, Map<Integer, Integer> statuses, Map<String, Integer> duplicates) {
    }

    private Sale runSale(String path) throws Exception {
        long productA = newProduct();
        long productB = newProduct();
        long firstUser = path.contains("unsafe") ? 100_000 : 1;

        List<long[]> groups = new ArrayList<>();
        for (long user = firstUser; user < firstUser + USERS; user++) {
            groups.add(new long[] { user, productA, COPIES_A });
            groups.add(new long[] { user, productB, COPIES_B });
        }
        Collections.shuffle(groups, new Random(42));
        List<long[]> requests = new ArrayList<>();
        for (long[] group : groups) {
            for (int copy = 0; copy < group[2]; copy++) {
                requests.add(group);
            }
        }

        ExecutorService pool = Executors.newFixedThreadPool(CLIENT_THREADS);
        Map<Integer, Integer> statuses = new TreeMap<>();
        Map<String, Integer> problems = new TreeMap<>();
        long start = System.nanoTime();
        try {
            List<Future<ShopClient.Response>> futures = new ArrayList<>();
            for (int i = 0; i < requests.size(); i++) {
                long[] request = requests.get(i);
                // consecutive copies of one order go to different instances
                String baseUrl = apps().get(i % INSTANCES).baseUrl();
                futures.add(pool.submit(() -> client.placeOrder(baseUrl, path, request[0], request[1], 1)));
            }
            long deadline = System.nanoTime() + LOAD_TIMEOUT.toNanos();
            for (Future<ShopClient.Response> future : futures) {
                ShopClient.Response response = future.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                statuses.merge(response.status(), 1, Integer::sum);
                if (response.status() != 201) {
                    String key = response.json().path("key").asString("");
                    String lock = key.isEmpty() ? "" : " (" + String.join(":", List.of(key.split(":")).subList(0, 2)) + ")";
                    problems.merge(response.status() + " " + response.problemType() + lock, 1, Integer::sum);
                }
            }
        }
        finally {
            pool.shutdownNow();
        }
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        System.out.printf("%s: %d requests over %d instances in %d ms: %s, rejections %s%n", path, requests.size(),
                INSTANCES, took.toMillis(), statuses, problems);
        assertThat(requests).hasSizeGreaterThanOrEqualTo(1000);
        return new Sale(List.of(productA, productB), statuses, duplicates(productA, productB));
    }

    private long newProduct() {
        ShopClient.Response created = client.createProduct(apps().get(0).baseUrl(), "flash-sale item", STOCK);
        assertThat(created.status()).isEqualTo(201);
        return created.json().path("id").asLong();
    }

    private Map<String, Integer> duplicates(long productA, long productB) throws SQLException {
        try (Connection connection = connect(); var statement = connection.prepareStatement("""
                SELECT user_id, product_id, COUNT(*) FROM orders WHERE product_id IN (?, ?)
                GROUP BY user_id, product_id HAVING COUNT(*) > 1""")) {
            statement.setLong(1, productA);
            statement.setLong(2, productB);
            Map<String, Integer> duplicates = new TreeMap<>();
            try (var rows = statement.executeQuery()) {
                while (rows.next()) {
                    duplicates.put(rows.getLong(1) + ":" + rows.getLong(2), rows.getInt(3));
                }
            }
            return duplicates;
        }
    }

    private int sold(long product) throws SQLException {
        return queryInt("SELECT COALESCE(SUM(quantity), 0) FROM orders WHERE product_id = ?", product);
    }

    private int stock(long product) throws SQLException {
        return queryInt("SELECT stock FROM product WHERE id = ?", product);
    }

    private int queryInt(String sql, long param) throws SQLException {
        try (Connection connection = connect(); var statement = connection.prepareStatement(sql)) {
            statement.setLong(1, param);
            try (var rows = statement.executeQuery()) {
                assertThat(rows.next()).isTrue();
                return rows.getInt(1);
            }
        }
    }
}

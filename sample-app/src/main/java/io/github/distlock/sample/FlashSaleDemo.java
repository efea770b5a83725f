package io.github.distlock.sample;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.LockTemplate;
import org.springframework.core.env.Environment;
import org.springframework.stereotype.Service;

/**
 * The dashboard's flash sale: a new product with a few items, and a crowd of buyers (one order each) released at
 * once at the locked endpoint ({@code POST /api/orders}) or the unsafe one ({@code POST /api/unsafe/orders}), over
 * HTTP, as real clients would. Fired from here rather than from the browser, which sends a handful of requests at a
 * time at most: the race needs them together.
 *
 * <p>Each sale is recorded ({@link SaleRecorder}): when every buyer entered and left the section the product lock
 * guards, and the queue for that lock. The latest sale of each mode is kept for the dashboard.
 */
@Service
public class FlashSaleDemo {

    /** Upper bounds of one sale: a demo, not a load generator. */
    static final int MAX_BUYERS = 100;
    static final int MAX_STOCK = 1000;

    private static final AtomicInteger SALES = new AtomicInteger();

    private final ProductService products;
    private final Environment environment;
    private final SaleRecorder recorder;
    private final LockTemplate locks;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    /** The latest sale of each mode, by mode. */
    private final Map<String, FlashSaleResult> latest = new ConcurrentHashMap<>();

    FlashSaleDemo(ProductService products, Environment environment, SaleRecorder recorder, LockTemplate locks) {
        this.products = products;
        this.environment = environment;
        this.recorder = recorder;
        this.locks = locks;
    }

    /** The latest sale with locks and the latest without, either {@code null} before the first. */
    public LatestSales latest() {
        return new LatestSales(latest.get("locked"), latest.get("unsafe"));
    }

    /**
     * Runs one sale and reports what the buyers got and what the shop was left with.
     *
     * @param locked the locked endpoint, or the unsafe one
     * @param stock items for sale
     * @param buyers buyers, each a different user ordering one item
     */
    public FlashSaleResult run(boolean locked, int stock, int buyers) throws InterruptedException {
        if (stock < 1 || stock > MAX_STOCK || buyers < 1 || buyers > MAX_BUYERS) {
            throw new IllegalArgumentException("stock must be 1-" + MAX_STOCK + " and buyers 1-" + MAX_BUYERS);
        }
        String mode = locked ? "locked" : "unsafe";
        int sale = SALES.incrementAndGet();
        ProductView product = products.create("flash sale " + sale + " (" + mode + ")", stock);
        String url = "http://127.0.0.1:" + environment.getRequiredProperty("local.server.port")
                + (locked ? "/api/orders" : "/api/unsafe/orders");
        CountDownLatch go = new CountDownLatch(1);
        List<Future<String>> outcomes = new ArrayList<>();
        ExecutorService crowd = Executors.newFixedThreadPool(buyers);
        SaleRecorder.Recording recording = null;
        try {
            for (int i = 0; i < buyers; i++) {
                long userId = 1_000_000L * sale + i;
                String body = "{\"userId\":%d,\"productId\":%d,\"quantity\":1}".formatted(userId, product.id());
                outcomes.add(crowd.submit(() -> {
                    go.await();
                    return buy(url, body);
                }));
            }
            recording = recorder.start(product.id(),
                    locked ? locks.fullKey(ProductLocks.key(product.id())) : null);
            go.countDown();
            int placed = 0;
            int soldOut = 0;
            int other = 0;
            for (Future<String> outcome : outcomes) {
                String result;
                try {
                    result = outcome.get();
                }
                catch (java.util.concurrent.ExecutionException ex) {
                    result = "error";
                }
                switch (result) {
                    case "placed" -> placed++;
                    case "out-of-stock" -> soldOut++;
                    default -> other++;
                }
            }
            SaleTimeline timeline = recording.stop();
            ProductView after = products.get(product.id());
            FlashSaleResult result = new FlashSaleResult(mode, product.id(), stock, buyers, placed, soldOut, other,
                    after.stock(), after.sold(), Math.max(0, after.sold() - stock), timeline);
            latest.put(mode, result);
            return result;
        }
        finally {
            crowd.shutdownNow();
            if (recording != null) {
                // a sale cut short (interrupted) stops its queue sampler too; a second stop is harmless
                recording.stop();
            }
        }
    }

    /** "placed", or the problem type of the refusal ("out-of-stock", "lock-not-acquired", ...). */
    private String buy(String url, String body) throws Exception {
        HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(url))
                .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() == 201) {
            return "placed";
        }
        int type = response.body().indexOf("urn:distlock-sample:problem:");
        if (type < 0) {
            return "status " + response.statusCode();
        }
        int start = type + "urn:distlock-sample:problem:".length();
        int end = response.body().indexOf('"', start);
        return response.body().substring(start, (end > 0) ? end : response.body().length());
    }

    /**
     * What one sale ended with.
     *
     * @param mode {@code locked} or {@code unsafe}
     * @param productId the product sold
     * @param stock items for sale
     * @param buyers buyers
     * @param placed orders accepted (201)
     * @param soldOut buyers told it was sold out (409 out-of-stock)
     * @param otherRefusals other refusals (a lock not had within the wait, errors)
     * @param stockLeft the stock the shop shows afterwards
     * @param sold items in accepted orders
     * @param oversold items sold that the shop did not have
     * @param timeline every buyer's stay in the guarded section and the queue for the product lock
     */
    public record FlashSaleResult(String mode, long productId, int stock, int buyers, int placed, int soldOut,
            int otherRefusals, int stockLeft, long sold, long oversold, SaleTimeline timeline) {
    }

    /**
     * The latest sale of each mode.
     *
     * @param locked the latest sale with locks, or {@code null}
     * @param unsafe the latest sale without locks, or {@code null}
     */
    public record LatestSales(FlashSaleResult locked, FlashSaleResult unsafe) {
    }
}

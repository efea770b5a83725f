package io.github.distlock.sample;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.github.distlock.testsupport.RedisServerExtension;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Redis frozen ({@code SIGSTOP}) while an order takes its lock, then thawed ({@code SIGCONT}): the order is refused
 * with 503, and the lock command it sent still runs when Redis resumes, taking the lock for nobody. That orphan must
 * never let a later request in (no request re-enters a lock it did not take), and it must be given back well within
 * the watchdog timeout (which alone would free it only after 10 s), after which the order goes through.
 *
 * <p>Tomcat runs one request thread, so every later request runs on the thread the refused one ran on: a lock owned
 * by "client id + thread id" (Redisson's default) would make each of them the orphan's owner. The test watches the
 * lock's hash in Redis with a client of its own: a 201 after which the key still holds a field means the request ran
 * while a lock it did not take held the key (its own lock is released before it answers, and nothing else touches
 * this key).
 */
class RedisPauseTest {

    /**
     * Long enough that an orphan left to expire would fail the test: the order must go through within {@link #MARGIN}
     * of the resume, which only the library's give-back of the timed-out acquisition achieves.
     */
    private static final Duration WATCHDOG = Duration.ofSeconds(10);
    /** How soon after the resume the order must go through, with slack for a loaded machine. */
    private static final Duration MARGIN = Duration.ofSeconds(3);

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private final ShopClient client = new ShopClient();
    private InProcessApp app;
    private RedisClient inspector;
    private RedisCommands<String, String> redisCommands;
    private boolean paused;

    @BeforeEach
    void start() {
        app = InProcessApp.start("--spring.data.redis.host=127.0.0.1", "--spring.data.redis.port=" + redis.port(),
                "--spring.data.redis.timeout=500ms", "--spring.data.redis.connect-timeout=500ms",
                "--distlock.watchdog-timeout=" + WATCHDOG.toMillis() + "ms",
                // one request thread: every request after the refused one runs on its thread
                "--server.tomcat.threads.max=1", "--server.tomcat.threads.min-spare=1");
        inspector = RedisClient.create(RedisURI.Builder.redis(redis.server().host(), redis.port())
                .withTimeout(Duration.ofSeconds(5)).build());
        StatefulRedisConnection<String, String> connection = inspector.connect();
        redisCommands = connection.sync();
    }

    @AfterEach
    void stop() throws Exception {
        // a test that failed half-way must not leave Redis frozen: the extension could not stop it cleanly
        if (paused) {
            signal("CONT");
        }
        if (inspector != null) {
            inspector.shutdown();
        }
        if (app != null) {
            app.close();
        }
    }

    @Test
    void anOrderCutOffByAFrozenRedisLeavesNoLockThatLetsAnotherRequestInAndNoneThatOutlivesTheWatchdog()
            throws Exception {
        long productId = newProduct(10);
        // warm-up: the request thread, Redisson's connections and the scripts exist before Redis freezes
        assertThat(client.placeOrder(app.baseUrl(), "/api/orders", 1, productId, 1).status()).isEqualTo(201);
        String lockKey = "lock:order:2:" + productId;

        signal("STOP");
        long frozenAt = System.nanoTime();
        ShopClient.Response refused = client.placeOrder(app.baseUrl(), "/api/orders", 2, productId, 1);
        System.out.println("503 with Redis frozen took " + elapsedMillis(frozenAt) + " ms");
        assertThat(refused.status()).isEqualTo(503);
        assertThat(refused.problemType()).isEqualTo("lock-backend-unavailable");
        assertThat(refused.json().path("key").asString()).isEqualTo(lockKey);
        signal("CONT");
        long resumedAt = System.nanoTime();
        assertThat(ordersInDb(2, productId)).isZero();

        // the user retries until the order goes through; each try is checked against the lock's hash around it
        List<String> tries = new ArrayList<>();
        List<String> reentries = new ArrayList<>();
        ShopClient.Response placed;
        try {
            placed = await("an order for " + lockKey + " after Redis resumed")
                    .atMost(MARGIN).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(100))
                    .until(() -> {
                        Map<String, String> before = redisCommands.hgetall(lockKey);
                        long ttlBefore = redisCommands.pttl(lockKey);
                        ShopClient.Response response = client.placeOrder(app.baseUrl(), "/api/orders", 2, productId, 1);
                        Map<String, String> after = redisCommands.hgetall(lockKey);
                        long ttlAfter = redisCommands.pttl(lockKey);
                        String record = "%d ms after resume: %s %s; %s before: %s (pttl %d), after: %s (pttl %d)"
                                .formatted(elapsedMillis(resumedAt), response.status(), response.problemType(),
                                        lockKey, before, ttlBefore, after, ttlAfter);
                        tries.add(record);
                        if (response.status() == 201 && !after.isEmpty()) {
                            reentries.add(record);
                        }
                        return response;
                    }, response -> response.status() == 201);
        }
        catch (ConditionTimeoutException ex) {
            throw new AssertionError("No order for " + lockKey + " went through within " + MARGIN.toMillis()
                    + " ms of Redis resuming (the orphan was not given back; its watchdog timeout is " + WATCHDOG.toMillis()
                    + " ms); tries:\n  "
                    + String.join("\n  ", tries), ex);
        }
        long succeededAfter = elapsedMillis(resumedAt);
        System.out.println("Tries after Redis resumed:\n  " + String.join("\n  ", tries));

        assertThat(reentries).as("orders answered 201 while a lock they did not take held %s (re-entry of an orphan "
                + "lock); all tries:%n  %s", lockKey, String.join("\n  ", tries)).isEmpty();
        assertThat(placed.json().path("userId").asLong()).isEqualTo(2);
        assertThat(ordersInDb(2, productId)).isEqualTo(1);
        assertThat(stockInDb(productId)).isEqualTo(8);
        assertThat(redisCommands.exists(lockKey)).as("%s after the order", lockKey).isZero();
        System.out.println("Order for " + lockKey + " placed " + succeededAfter + " ms after Redis resumed");

        // later submits find the lock free: they are answered from the database, never by a held lock
        ShopClient.Response again = client.placeOrder(app.baseUrl(), "/api/orders", 2, productId, 1);
        assertThat(again.status()).isEqualTo(409);
        assertThat(again.problemType()).isEqualTo("duplicate-order");
        // and other keys work as before
        assertThat(client.placeOrder(app.baseUrl(), "/api/orders", 3, productId, 1).status()).isEqualTo(201);
        assertThat(stockInDb(productId)).isEqualTo(7);
    }

    /** Signals the redis-server process: {@code STOP} freezes it as a long pause would, {@code CONT} thaws it. */
    private void signal(String name) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(redis.server().pid()))
                .redirectErrorStream(true).start();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS)).as("kill -%s returned", name).isTrue();
        assertThat(kill.exitValue()).as("kill -%s: %s", name, new String(kill.getInputStream().readAllBytes()))
                .isZero();
        paused = name.equals("STOP");
    }

    private static long elapsedMillis(long since) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - since);
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

    private int stockInDb(long productId) {
        return app.jdbc().sql("SELECT stock FROM product WHERE id = ?").param(productId).query(Integer.class).single();
    }
}

package io.github.distlock.actuate;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import com.jayway.jsonpath.JsonPath;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.it.RecordingLockListener;
import io.github.distlock.testsupport.RedisServerExtension;
import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The endpoint over HTTP, on a real redis-server, with two application instances: "alpha" holds a lock and keeps the
 * default sanitising and no force release; "beta" shows keys and may force-release. Both run in this JVM, so they share
 * host and pid and differ by application name, which is what the holder lookup must get right.
 */
@ExtendWith(OutputCaptureExtension.class)
class DistlockEndpointTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private static final String KEY = "order:4711";
    private static final String FULL_KEY = "lock:" + KEY;

    static WebApp alpha;
    static WebApp beta;

    @BeforeAll
    static void start() {
        String[] redisAt = {"spring.data.redis.host=" + redis.server().host(), "spring.data.redis.port=" + redis.port(),
                // a third of it paces the lease check that reports a force-released lock to its holder
                "distlock.watchdog-timeout=6s"};
        alpha = WebApp.start(concat(redisAt, "spring.application.name=alpha"));
        beta = WebApp.start(concat(redisAt, "spring.application.name=beta",
                "management.endpoint.distlock.show-values=always", "distlock.actuator.force-release-enabled=true"));
    }

    @AfterAll
    static void stop() {
        if (alpha != null) {
            alpha.close();
        }
        if (beta != null) {
            beta.close();
        }
    }

    @Test
    void aHeldLockIsListedFoundFromAnotherInstanceAndForceReleasedOnlyWhereEnabled(CapturedOutput output) throws Exception {
        LockTemplate locks = alpha.bean(LockTemplate.class);
        RecordingLockListener alphaEvents = alpha.bean(RecordingLockListener.class);
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        CompletableFuture<Void> holder = CompletableFuture.runAsync(() -> locks.run(KEY,
                LockOptions.DEFAULTS.withName("order-holder"), () -> {
                    holding.countDown();
                    awaitQuietly(finish);
                }));
        CompletableFuture<Long> waiter = null;
        try {
            assertThat(holding.await(20, TimeUnit.SECONDS)).isTrue();
            // a second call of alpha waits for the lock meanwhile
            CountDownLatch waiterStarted = new CountDownLatch(1);
            waiter = CompletableFuture.supplyAsync(() -> {
                waiterStarted.countDown();
                return locks.execute(KEY, LockOptions.waitFor(Duration.ofSeconds(40)).withName("order-waiter"),
                        System::nanoTime);
            });
            assertThat(waiterStarted.await(10, TimeUnit.SECONDS)).isTrue();
            await().atMost(Duration.ofSeconds(10)).until(() -> JsonPath.<List<?>>read(alpha.get("/actuator/distlock").body(),
                    "$.waiting").size() == 1);

            // alpha lists its hold and its waiter, keys masked (show-values defaults to never)
            WebApp.Response listed = alpha.get("/actuator/distlock");
            assertThat(listed.status()).isEqualTo(200);
            assertThat(listed.body()).doesNotContain(KEY);
            List<Map<String, Object>> held = JsonPath.read(listed.body(), "$.held");
            assertThat(held).hasSize(1);
            assertThat(held.get(0)).containsEntry("key", "******").containsEntry("type", "REENTRANT")
                    .containsEntry("name", "order-holder").containsEntry("lease", "watchdog");
            assertThat(held.get(0).get("thread").toString()).isNotBlank();
            assertThat(((Number) held.get(0).get("heldForMillis")).longValue()).isGreaterThanOrEqualTo(0);
            assertThat(held.get(0).get("fencingToken")).isNull();
            List<Map<String, Object>> waiting = JsonPath.read(listed.body(), "$.waiting");
            assertThat(waiting.get(0)).containsEntry("key", "******").containsEntry("name", "order-waiter");
            assertThat(JsonPath.<String>read(listed.body(), "$.configuration.keyPrefix")).isEqualTo("lock:");
            assertThat(JsonPath.<Integer>read(listed.body(), "$.configuration.watchdogTimeoutMillis")).isEqualTo(6000);
            assertThat(JsonPath.<Boolean>read(listed.body(), "$.configuration.forceReleaseEnabled")).isFalse();
            assertThat(JsonPath.<String>read(listed.body(), "$.instance.application")).isEqualTo("alpha");

            // beta finds alpha holding it, by key without the prefix, and shows the key
            WebApp.Response found = beta.get("/actuator/distlock/" + KEY);
            assertThat(found.status()).isEqualTo(200);
            assertThat(JsonPath.<String>read(found.body(), "$.key")).isEqualTo(FULL_KEY);
            assertThat(JsonPath.<Boolean>read(found.body(), "$.held")).isTrue();
            List<Map<String, Object>> holders = JsonPath.read(found.body(), "$.holders");
            assertThat(holders).hasSize(1);
            assertThat(holders.get(0)).containsEntry("thisInstance", false).containsEntry("mode", "exclusive");
            assertThat(JsonPath.<String>read(found.body(), "$.holders[0].instance.application")).isEqualTo("alpha");
            assertThat(JsonPath.<Integer>read(found.body(), "$.holders[0].instance.pid"))
                    .isEqualTo((int) ProcessHandle.current().pid());
            long remaining = ((Number) holders.get(0).get("remainingMillis")).longValue();
            assertThat(remaining).isBetween(1L, 6000L);
            assertThat(JsonPath.<List<?>>read(found.body(), "$.heldHere")).isEmpty();
            // the owner is alpha's Redis owner field, and alpha's identity lives in Redis with a TTL
            String owner = holders.get(0).get("owner").toString();
            // alpha's own list names its holder as the key view does
            assertThat(held.get(0)).containsEntry("owner", owner);
            try (RespClient client = RespClient.connect(redis.port())) {
                assertThat(client.call("HEXISTS", FULL_KEY, owner)).isEqualTo(1L);
                String instanceKey = "distlock:instance:{" + holders.get(0).get("instanceId") + "}";
                assertThat(client.call("GET", instanceKey).toString()).startsWith("application=alpha&host=")
                        .endsWith("&pid=" + ProcessHandle.current().pid());
                assertThat((Long) client.call("PTTL", instanceKey)).isBetween(1L, 6000L);
            }

            // alpha answers the same question about itself, key masked
            WebApp.Response self = alpha.get("/actuator/distlock/" + FULL_KEY);
            assertThat(JsonPath.<String>read(self.body(), "$.key")).isEqualTo("******");
            assertThat(JsonPath.<Boolean>read(self.body(), "$.holders[0].thisInstance")).isTrue();
            assertThat(JsonPath.<List<?>>read(self.body(), "$.heldHere")).hasSize(1);
            assertThat(self.body()).doesNotContain(KEY);

            // alpha refuses to force-release: off by default
            WebApp.Response refused = alpha.delete("/actuator/distlock/" + KEY);
            assertThat(refused.status()).isEqualTo(403);
            assertThat(JsonPath.<String>read(refused.body(), "$.note")).contains("distlock.actuator.force-release-enabled");
            assertThat(JsonPath.<Boolean>read(beta.get("/actuator/distlock/" + KEY).body(), "$.held")).isTrue();

            // an owner that does not hold it: 409 with the holder now, and the lock stays
            WebApp.Response conflict = beta.delete("/actuator/distlock/" + KEY + "?owner="
                    + holders.get(0).get("instanceId") + ":1");
            assertThat(conflict.status()).isEqualTo(409);
            assertThat(JsonPath.<Boolean>read(conflict.body(), "$.released")).isFalse();
            assertThat(JsonPath.<String>read(conflict.body(), "$.holders[0].owner")).isEqualTo(owner);
            try (RespClient client = RespClient.connect(redis.port())) {
                assertThat(client.call("HEXISTS", FULL_KEY, owner)).isEqualTo(1L);
            }

            // beta force-releases it from the owner GET named: the key is gone, the waiter is woken at once, the holder hears it lost its lock
            WebApp.Response released = beta.delete("/actuator/distlock/" + KEY + "?owner=" + owner);
            long releasedAt = System.nanoTime();
            assertThat(released.status()).isEqualTo(200);
            assertThat(JsonPath.<Boolean>read(released.body(), "$.released")).isTrue();
            assertThat(JsonPath.<String>read(released.body(), "$.evicted[0].owner")).isEqualTo(owner);
            assertThat(JsonPath.<String>read(released.body(), "$.evicted[0].instance.application")).isEqualTo("alpha");
            // woken by the release message, not by its own retry after the lock's TTL (up to 6 s)
            long acquiredAt = waiter.get(20, TimeUnit.SECONDS);
            assertThat(Duration.ofNanos(acquiredAt - releasedAt)).isLessThan(Duration.ofMillis(1500));
            assertThat(output.getOut()).contains("Force-released lock '" + FULL_KEY + "'").contains(owner)
                    .contains("instance alpha on ").contains("told through its lease-lost path");
            await().atMost(Duration.ofSeconds(15)).until(() -> alphaEvents.events.contains("leaseLost:" + FULL_KEY));
            // nobody holds it any more once the waiter is done; a second DELETE evicts nobody
            WebApp.Response again = beta.delete("/actuator/distlock/" + KEY);
            assertThat(JsonPath.<Boolean>read(again.body(), "$.released")).isFalse();
        }
        finally {
            finish.countDown();
            holder.get(20, TimeUnit.SECONDS);
            if (waiter != null) {
                waiter.get(60, TimeUnit.SECONDS);
            }
        }
        assertThat(JsonPath.<List<?>>read(alpha.get("/actuator/distlock").body(), "$.held")).isEmpty();
    }

    @Test
    void aReadLockHeldByTwoCallsListsBothHolders() throws Exception {
        LockTemplate locks = alpha.bean(LockTemplate.class);
        CountDownLatch holding = new CountDownLatch(2);
        CountDownLatch finish = new CountDownLatch(1);
        List<CompletableFuture<Void>> readers = List.of(1, 2).stream().map(i -> CompletableFuture.runAsync(
                () -> locks.run("report:1", LockOptions.DEFAULTS.withType(io.github.distlock.LockType.READ), () -> {
                    holding.countDown();
                    awaitQuietly(finish);
                }))).toList();
        try {
            assertThat(holding.await(20, TimeUnit.SECONDS)).isTrue();
            WebApp.Response found = beta.get("/actuator/distlock/report:1");
            assertThat(JsonPath.<List<String>>read(found.body(), "$.holders[*].mode")).containsExactly("read", "read");
            assertThat(JsonPath.<List<String>>read(found.body(), "$.holders[*].instance.application"))
                    .containsExactly("alpha", "alpha");
        }
        finally {
            finish.countDown();
            for (CompletableFuture<Void> reader : readers) {
                reader.get(20, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void aKeyTheBackendRefusesIsABadRequest() {
        // a '{' that opens no hash tag: the Redis backend refuses the key (500 if the refusal were not mapped)
        assertThat(beta.get("/actuator/distlock/tenant:%7B7:order").status()).isEqualTo(400);
        assertThat(beta.delete("/actuator/distlock/tenant:%7B7:order").status()).isEqualTo(400);
    }

    @Test
    void aKeyThatIsNotALockIsRefusedAndLeftAlone() {
        try (RespClient client = RespClient.connect(redis.port())) {
            // a session-like hash with a TTL, a hash that looks like a lock but has no TTL, a string
            client.call("HSET", "lock:session:1", "user", "alice");
            client.call("PEXPIRE", "lock:session:1", "600000");
            client.call("HSET", "lock:nottl:1", "0f6e-id:12", "1");
            client.call("SET", "lock:string:1", "x");
            for (String key : List.of("session:1", "nottl:1", "string:1")) {
                WebApp.Response deleted = beta.delete("/actuator/distlock/" + key);
                assertThat(deleted.status()).as(key).isEqualTo(400);
                assertThat(beta.get("/actuator/distlock/" + key).status()).as(key).isEqualTo(400);
                assertThat(client.call("EXISTS", "lock:" + key)).as(key).isEqualTo(1L);
            }
            assertThat(client.call("HGET", "lock:session:1", "user").toString()).isEqualTo("alice");
        }
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(60, TimeUnit.SECONDS);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    private static String[] concat(String[] first, String... more) {
        String[] all = java.util.Arrays.copyOf(first, first.length + more.length);
        System.arraycopy(more, 0, all, first.length, more.length);
        return all;
    }
}

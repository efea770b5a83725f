package io.github.distlock.actuate;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import com.jayway.jsonpath.JsonPath;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.testsupport.RedisServerExtension;
import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static io.github.distlock.actuate.TwoInstances.owner;
import static io.github.distlock.actuate.TwoInstances.tryLock;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * {@code DELETE /actuator/distlock/{key}?owner=X} releases X's hold and nothing else: the other readers and permit
 * holders of the key keep theirs, and a writer stays excluded while they hold. Without an owner every holder of every
 * type is evicted. Checked over HTTP between two instances, against Redis read directly.
 */
class ForceReleaseOfOneHolderTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    static TwoInstances apps;

    @BeforeAll
    static void start() {
        apps = TwoInstances.start(redis);
    }

    @AfterAll
    static void stop() {
        if (apps != null) {
            apps.close();
        }
    }

    @Test
    void aForceReleaseNamingOneReaderLeavesTheOtherReaderHoldingAndTheWriterOut() {
        String key = "lock:report:two-readers";
        LockOwner first = LockOwner.next();
        LockOwner second = LockOwner.next();
        LockHandle firstReader = tryLock(apps.alpha, key, LockType.READ, first);
        LockHandle secondReader = tryLock(apps.alpha, key, LockType.READ, second);
        assertThat(firstReader).isNotNull();
        assertThat(secondReader).isNotNull();
        List<String> lost = new CopyOnWriteArrayList<>();
        firstReader.whenLost(lost::add);
        secondReader.whenLost(lost::add);

        WebApp.Response released = apps.beta.delete("/actuator/distlock/" + key + "?owner=" + owner(apps.alpha, first));

        assertThat(released.status()).isEqualTo(200);
        assertThat(JsonPath.<List<String>>read(released.body(), "$.evicted[*].owner"))
                .containsExactly(owner(apps.alpha, first));
        try (RespClient client = RespClient.connect(redis.port())) {
            assertThat(RedisHolders.of(client, key))
                    .containsExactly(new RedisHolders.Holder(owner(apps.alpha, second), "read"));
        }
        assertThat(JsonPath.<List<String>>read(apps.beta.get("/actuator/distlock/" + key).body(), "$.holders[*].owner"))
                .containsExactly(owner(apps.alpha, second));
        // the other instance's writer stays out while the second reader reads
        LockHandle writer = tryLock(apps.beta, key, LockType.WRITE, LockOwner.next());
        assertThat(writer).isNull();
        // the evicted reader learns it (the force release's message to its instance), the other one does not
        await().atMost(Duration.ofSeconds(10)).until(() -> lost.size() == 1);
        assertThat(firstReader.release()).isFalse();
        assertThat(secondReader.release()).isTrue();
        assertThat(lost).hasSize(1);
        writer = tryLock(apps.beta, key, LockType.WRITE, LockOwner.next());
        assertThat(writer).isNotNull();
        assertThat(writer.release()).isTrue();
    }

    @Test
    void aForceReleaseNamingOnePermitHolderFreesThatPermitOnly() {
        String key = "lock:export:permits";
        LockOwner first = LockOwner.next();
        LockOwner second = LockOwner.next();
        LockHandle one = tryLock(apps.alpha, key, LockType.REENTRANT, first, 60_000, false, 2);
        LockHandle two = tryLock(apps.beta, key, LockType.REENTRANT, second, 60_000, false, 2);
        assertThat(one).isNotNull();
        assertThat(two).isNotNull();
        assertThat(tryLock(apps.beta, key, LockType.REENTRANT, LockOwner.next(), 60_000, false, 2)).isNull();

        WebApp.Response found = apps.alpha.get("/actuator/distlock/" + key);
        assertThat(JsonPath.<Boolean>read(found.body(), "$.held")).isTrue();
        assertThat(JsonPath.<List<String>>read(found.body(), "$.holders[*].owner"))
                .containsExactlyInAnyOrder(owner(apps.alpha, first), owner(apps.beta, second));
        assertThat(JsonPath.<List<String>>read(found.body(), "$.holders[*].mode")).containsOnly("permit");

        WebApp.Response released = apps.alpha.delete("/actuator/distlock/" + key + "?owner=" + owner(apps.alpha, first));
        assertThat(released.status()).isEqualTo(200);
        assertThat(JsonPath.<List<String>>read(released.body(), "$.evicted[*].owner"))
                .containsExactly(owner(apps.alpha, first));
        try (RespClient client = RespClient.connect(redis.port())) {
            assertThat(RedisHolders.of(client, key))
                    .containsExactly(new RedisHolders.Holder(owner(apps.beta, second), "permit"));
        }
        assertThat(one.release()).isFalse();
        // the freed permit is one permit: a third owner takes it, a fourth does not get in
        LockHandle third = tryLock(apps.beta, key, LockType.REENTRANT, LockOwner.next(), 60_000, false, 2);
        assertThat(third).isNotNull();
        assertThat(tryLock(apps.alpha, key, LockType.REENTRANT, LockOwner.next(), 60_000, false, 2)).isNull();
        assertThat(two.release()).isTrue();
        assertThat(third.release()).isTrue();
    }

    @Test
    void aReaderWhoseLeaseRanOutIsNoHolderAndCannotBeForceReleased() {
        String key = "lock:report:expired-reader";
        LockOwner expired = LockOwner.next();
        LockOwner living = LockOwner.next();
        LockHandle shortRead = tryLock(apps.alpha, key, LockType.READ, expired, 200, false, 1);
        LockHandle longRead = tryLock(apps.beta, key, LockType.READ, living, 60_000, false, 1);
        assertThat(shortRead).isNotNull();
        assertThat(longRead).isNotNull();
        try (RespClient client = RespClient.connect(redis.port())) {
            // the hash lives on for the second reader; the first reader's own lease key is gone
            await().atMost(Duration.ofSeconds(5)).until(() -> RedisHolders.of(client, key).size() == 1);
            assertThat(RedisHolders.hash(client, RedisHolders.readWriteKey(key))).containsKey(owner(apps.alpha, expired));
        }

        WebApp.Response found = apps.beta.get("/actuator/distlock/" + key);
        assertThat(JsonPath.<List<String>>read(found.body(), "$.holders[*].owner"))
                .containsExactly(owner(apps.beta, living));
        assertThat(((Number) JsonPath.read(found.body(), "$.holders[0].remainingMillis")).longValue())
                .isBetween(50_000L, 60_000L);

        WebApp.Response refused = apps.beta.delete("/actuator/distlock/" + key + "?owner=" + owner(apps.alpha, expired));
        assertThat(refused.status()).isEqualTo(409);
        assertThat(JsonPath.<List<String>>read(refused.body(), "$.holders[*].owner"))
                .containsExactly(owner(apps.beta, living));
        try (RespClient client = RespClient.connect(redis.port())) {
            assertThat(RedisHolders.of(client, key)).containsExactly(new RedisHolders.Holder(owner(apps.beta, living),
                    "read"));
        }
        // (what the expired reader's own release answers is Redisson's read unlock's business, not the endpoint's)
        shortRead.release();
        assertThat(longRead.release()).isTrue();
    }

    @Test
    void aForceReleaseNamingTheWriterAlsoEndsItsOwnReadAndLetsOthersIn() {
        String key = "lock:report:writer-reads";
        LockOwner writerOwner = LockOwner.next();
        LockHandle write = tryLock(apps.alpha, key, LockType.WRITE, writerOwner);
        LockHandle read = tryLock(apps.alpha, key, LockType.READ, writerOwner);
        assertThat(write).isNotNull();
        assertThat(read).isNotNull();
        String named = owner(apps.alpha, writerOwner);
        WebApp.Response found = apps.beta.get("/actuator/distlock/" + key);
        assertThat(JsonPath.<List<String>>read(found.body(), "$.holders[*].mode")).containsExactlyInAnyOrder("write",
                "read");
        assertThat(JsonPath.<List<String>>read(found.body(), "$.holders[*].owner")).containsOnly(named);

        WebApp.Response released = apps.beta.delete("/actuator/distlock/" + key + "?owner=" + named);
        assertThat(released.status()).isEqualTo(200);
        try (RespClient client = RespClient.connect(redis.port())) {
            assertThat(RedisHolders.of(client, key)).isEmpty();
            assertThat(client.call("EXISTS", RedisHolders.readWriteKey(key))).isEqualTo(0L);
        }
        LockHandle other = tryLock(apps.beta, key, LockType.WRITE, LockOwner.next());
        assertThat(other).isNotNull();
        assertThat(read.release()).isFalse();
        assertThat(write.release()).isFalse();
        assertThat(other.release()).isTrue();
    }

    @Test
    void aKeyWithACompanionThatIsNotALockIsRefusedBeforeAnythingIsDeleted() {
        String key = "lock:report:odd-companion";
        LockOwner holderOwner = LockOwner.next();
        LockHandle holder = tryLock(apps.alpha, key, LockType.REENTRANT, holderOwner);
        assertThat(holder).isNotNull();
        try (RespClient client = RespClient.connect(redis.port())) {
            // something else wrote the read/write hash's name (only possible from outside distlock)
            client.call("SET", RedisHolders.readWriteKey(key), "not a lock");

            assertThat(apps.beta.delete("/actuator/distlock/" + key).status()).isEqualTo(400);
            assertThat(RedisHolders.hash(client, key)).containsOnlyKeys(owner(apps.alpha, holderOwner));
            assertThatThrownBy(() -> TwoInstances.provider(apps.beta).forceRelease(key))
                    .isInstanceOf(io.github.distlock.spi.NotALockException.class)
                    .hasMessage("not a distlock lock: the read/write key holds a string, not a lock");
            assertThat(RedisHolders.hash(client, key)).containsOnlyKeys(owner(apps.alpha, holderOwner));
            assertThat(client.call("GET", RedisHolders.readWriteKey(key))).isEqualTo("not a lock");
            client.call("DEL", RedisHolders.readWriteKey(key));
        }
        assertThat(holder.release()).isTrue();
    }

    @Test
    void anEvictedFairHolderLearnsItAndItsQueuedWaiterIsHandedTheLock() throws Exception {
        String key = "lock:report:fair";
        LockOwner holderOwner = LockOwner.next();
        LockHandle holder = tryLock(apps.alpha, key, LockType.FAIR, holderOwner);
        assertThat(holder).isNotNull();
        List<String> lost = new CopyOnWriteArrayList<>();
        holder.whenLost(lost::add);
        LockOwner waiterOwner = LockOwner.next();
        java.util.concurrent.CompletableFuture<LockHandle> waiter = TwoInstances.provider(apps.beta).acquire(
                new io.github.distlock.spi.LockRequest(key, java.util.concurrent.TimeUnit.SECONDS.toNanos(30), 0, false,
                        LockType.FAIR, waiterOwner));
        try (RespClient client = RespClient.connect(redis.port())) {
            await().atMost(Duration.ofSeconds(10)).until(() -> (Long) client.call("LLEN",
                    "distlock_queue:{" + key + "}") == 1L);
        }
        assertThat(waiter).isNotDone();

        WebApp.Response released = apps.beta.delete("/actuator/distlock/" + key + "?owner="
                + owner(apps.alpha, holderOwner));
        assertThat(released.status()).isEqualTo(200);

        // handed on by the force release itself, not found by a poll after the holder's lease
        LockHandle next = waiter.get(2, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(next).isNotNull();
        try (RespClient client = RespClient.connect(redis.port())) {
            assertThat(RedisHolders.of(client, key))
                    .containsExactly(new RedisHolders.Holder(owner(apps.beta, waiterOwner), "exclusive"));
        }
        assertThat(tryLock(apps.alpha, key, LockType.REENTRANT, LockOwner.next())).isNull();
        // the evicted watchdog holder is told (the force release names it to its instance), and its release touches nothing
        await().atMost(Duration.ofSeconds(10)).until(() -> lost.size() == 1);
        assertThat(holder.release()).isFalse();
        try (RespClient client = RespClient.connect(redis.port())) {
            assertThat(RedisHolders.of(client, key))
                    .containsExactly(new RedisHolders.Holder(owner(apps.beta, waiterOwner), "exclusive"));
        }
        assertThat(next.release()).isTrue();
    }

    @Test
    void aForceReleaseWithoutOwnerEvictsEveryHolderOfEveryType() {
        String key = "lock:report:everyone";
        LockHandle exclusive = tryLock(apps.alpha, key, LockType.REENTRANT, LockOwner.next(), 0, true, 1);
        LockHandle reader = tryLock(apps.beta, key, LockType.READ, LockOwner.next());
        LockHandle permit = tryLock(apps.beta, key, LockType.REENTRANT, LockOwner.next(), 60_000, false, 3);
        assertThat(List.of(exclusive, reader, permit)).doesNotContainNull();
        String counter = "redisson_lock_token:{" + key + "}";
        String token;
        try (RespClient client = RespClient.connect(redis.port())) {
            token = client.call("GET", counter).toString();
        }

        WebApp.Response released = apps.alpha.delete("/actuator/distlock/" + key);
        assertThat(released.status()).isEqualTo(200);
        assertThat(JsonPath.<List<String>>read(released.body(), "$.evicted[*].mode"))
                .containsExactlyInAnyOrder("exclusive", "read", "permit");
        try (RespClient client = RespClient.connect(redis.port())) {
            assertThat(RedisHolders.of(client, key)).isEmpty();
            // the fencing counter is no lock: kept, so that tokens keep rising
            assertThat(client.call("GET", counter)).isEqualTo(token);
        }
        assertThat(exclusive.release()).isFalse();
        assertThat(reader.release()).isFalse();
        assertThat(permit.release()).isFalse();
    }
}

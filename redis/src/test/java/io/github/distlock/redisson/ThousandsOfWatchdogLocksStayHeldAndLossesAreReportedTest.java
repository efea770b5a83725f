package io.github.distlock.redisson;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;

import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The lease monitor renews Redisson's locks in chunks, with the script that also tells which were lost: 3,000 locks
 * held with a 1 s watchdog all stay held, and the few taken away behind the provider's back are reported lost.
 */
class ThousandsOfWatchdogLocksStayHeldAndLossesAreReportedTest {

    private static final Duration WATCHDOG = Duration.ofSeconds(1);

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private static RedissonClient client;
    private static RedissonLockProvider provider;

    @BeforeAll
    static void connect() {
        Config config = new Config();
        config.setLockWatchdogTimeout(WATCHDOG.toMillis());
        config.useSingleServer().setAddress(redis.uri());
        client = Redisson.create(config);
        provider = new RedissonLockProvider(client);
    }

    @AfterAll
    static void disconnect() {
        if (provider != null) {
            provider.close();
        }
        if (client != null) {
            client.shutdown();
        }
    }

    @Test
    void threeThousandLocksStayHeldAcrossRenewalsAndExactlyTheKeysTakenAwayAreReportedLost() {
        ThousandsOfHeldLocks.holdRenewAndReportExactlyTheKeysTakenAway(client, provider, "held:", 3_000, WATCHDOG);
    }

    @Test
    void closingTheProviderTellsTheHoldersOfItsWatchdogLocksAndRefusesNewOnes() {
        RedissonLockProvider closing = new RedissonLockProvider(client);
        LockHandle held = closing.acquire(new LockRequest("closing:held", 0, 0, false, LockType.REENTRANT,
                LockOwner.next())).orTimeout(10, TimeUnit.SECONDS).join();
        CompletableFuture<String> told = new CompletableFuture<>();
        held.whenLost(told::complete);

        closing.close();

        // nothing renews the lock any more: its holder hears it now, not from a second holder after the lease
        assertThat(told.orTimeout(5, TimeUnit.SECONDS).join()).contains("provider was closed");
        assertThat(held.lostWhileHeld()).isTrue();
        assertThatThrownBy(() -> closing.acquire(new LockRequest("closing:new", 0, 0, false, LockType.REENTRANT,
                LockOwner.next()))).isInstanceOf(IllegalStateException.class).hasMessageContaining("closing:new")
                .hasMessageContaining("closed");
    }

    @Test
    void renewalGoesOnAfterAsManyBatchesAsMayBeInFlightNeverAnswered() throws Exception {
        try (RedissonLockProvider hanging = new RedissonLockProvider(client)) {
            LeaseMonitor monitor = (LeaseMonitor) field(RedissonLockProvider.class, "monitor").get(hanging);
            java.lang.reflect.Field senderField = field(LeaseMonitor.class, "sender");
            LeaseMonitor.ChunkSender real = (LeaseMonitor.ChunkSender) senderField.get(monitor);
            AtomicBoolean hang = new AtomicBoolean(true);
            AtomicInteger hung = new AtomicInteger();
            // a connection that swallows the batch: its answers never come
            senderField.set(monitor, (LeaseMonitor.ChunkSender) chunks -> {
                if (hang.get()) {
                    hung.incrementAndGet();
                    return chunks.stream().map(chunk -> new CompletableFuture<List<Object>>()).toList();
                }
                return real.send(chunks);
            });
            // one lock per renewal period, each in a batch of its own that never answers
            for (int i = 0; i < LeaseMonitor.IN_FLIGHT; i++) {
                hanging.acquire(new LockRequest("hung:" + i, 0, 0, false, LockType.REENTRANT, LockOwner.next()))
                        .orTimeout(10, TimeUnit.SECONDS).join();
                int sent = i + 1;
                await().atMost(Duration.ofSeconds(5)).until(() -> hung.get() >= sent);
            }
            hang.set(false);

            LockHandle fresh = hanging.acquire(new LockRequest("hung:fresh", 0, 0, false, LockType.REENTRANT,
                    LockOwner.next())).orTimeout(10, TimeUnit.SECONDS).join();
            Set<String> lost = ConcurrentHashMap.newKeySet();
            fresh.whenLost(lost::add);

            // three watchdog timeouts: renewed all along, never reported
            await().pollInterval(Duration.ofMillis(100)).during(WATCHDOG.multipliedBy(3))
                    .atMost(WATCHDOG.multipliedBy(5))
                    .until(() -> client.getBucket("hung:fresh").isExists() && lost.isEmpty());
            fresh.releaseAsync().join();
        }
    }

    @Test
    void aRenewalChunkWhoseOwnersDoNotMatchItsKeysOneForOneFailsAndConfirmsNothing() {
        String head = client.getId() + ":";
        client.getMap("mismatch:a", org.redisson.client.codec.StringCodec.INSTANCE).put(head + "1", "1");
        client.getMap("mismatch:b", org.redisson.client.codec.StringCodec.INSTANCE).put(head + "2", "1");
        client.getKeys().expire("mismatch:a", 5, TimeUnit.SECONDS);
        org.redisson.api.RScript script = client.getScript(org.redisson.client.codec.ByteArrayCodec.INSTANCE);

        // one owner for two keys: the script must not answer "all held" for the second key, which it never checked
        assertThatThrownBy(() -> script.eval("mismatch:a", org.redisson.api.RScript.Mode.READ_WRITE,
                LeaseMonitor.RENEW_SCRIPT, org.redisson.api.RScript.ReturnType.LIST,
                List.of("mismatch:a", "mismatch:b"), bytes(head), bytes("60000"), bytes(""), bytes(""), bytes("1")))
                .hasMessageContaining("distlock renewal: 1 owners for 2 keys");

        // matched one for one: the held key is renewed, the key without its owner's field is answered lost
        List<Object> lost = script.eval("mismatch:a", org.redisson.api.RScript.Mode.READ_WRITE,
                LeaseMonitor.RENEW_SCRIPT, org.redisson.api.RScript.ReturnType.LIST,
                List.of("mismatch:a", "mismatch:b"), bytes(head), bytes("60000"), bytes(""), bytes(""), bytes("1,3"));
        assertThat(lost).containsExactly(2L);
        assertThat(client.getKeys().remainTimeToLive("mismatch:a")).isGreaterThan(50_000);
        assertThat(client.getKeys().remainTimeToLive("mismatch:b")).isEqualTo(-1);
        client.getKeys().delete("mismatch:a", "mismatch:b");
    }

    @Test
    void aWritersRenewalNeverShortensTheLongerLeaseOfItsOwnReadHold() {
        LockOwner owner = LockOwner.next();
        LockHandle write = provider.acquire(new LockRequest("rw-renewal", 0, 0, false, LockType.WRITE, owner))
                .orTimeout(10, TimeUnit.SECONDS).join();
        // the same owner reads the key it writes, with a fixed lease ten watchdog timeouts long
        LockHandle read = provider.acquire(new LockRequest("rw-renewal", 0, TimeUnit.SECONDS.toNanos(10), false,
                LockType.READ, owner)).orTimeout(10, TimeUnit.SECONDS).join();
        assertThat(write).isNotNull();
        assertThat(read).isNotNull();
        String hash = LockKeys.readWriteKey("rw-renewal");
        // the writer's renewals (every third of the watchdog timeout) must leave the reader's longer lease on the hash
        await().pollInterval(Duration.ofMillis(50)).during(WATCHDOG.multipliedBy(2)).atMost(WATCHDOG.multipliedBy(4))
                .until(() -> client.getKeys().remainTimeToLive(hash) > 5_000);
        write.releaseAsync().join();
        read.releaseAsync().join();
    }

    private static byte[] bytes(String text) {
        return text.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    }

    private static java.lang.reflect.Field field(Class<?> owner, String name) throws NoSuchFieldException {
        java.lang.reflect.Field field = owner.getDeclaredField(name);
        field.setAccessible(true);
        return field;
    }
}

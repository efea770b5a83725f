package io.github.distlock.it;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * A nested call never re-enters a lock its outer call lost; keys that would break on a cluster, collide with another
 * lock's companion keys or print an object's identity are refused before locking; a loss is reported once. Each
 * against a real redis-server.
 */
@SpringBootTest(classes = {LockTestApplication.class, LostLocksAreNotReenteredAndUnsafeKeysAreRefusedTest.Config.class},
        properties = "distlock.watchdog-timeout=1s")
class LostLocksAreNotReenteredAndUnsafeKeysAreRefusedTest extends RedisIntegrationTest {

    @Autowired
    LockTemplate locks;

    @Autowired
    io.github.distlock.spi.LockProvider provider;

    @Autowired
    Nested nested;

    @Autowired
    RecordingLockListener recorder;

    private final List<HeldElsewhere> holders = new java.util.concurrent.CopyOnWriteArrayList<>();

    @AfterEach
    void cleanUp() {
        holders.forEach(HeldElsewhere::releaseLater);
        await().atMost(Duration.ofSeconds(10)).until(() -> redisCommands.keys("lock:*").isEmpty());
        recorder.events.clear();
    }

    /** A nested call must not re-enter a lock whose fixed lease ran out and that another caller now holds. */
    @Test
    void nestedCallDoesNotReenterALockTheOuterCallLost() {
        AtomicInteger nestedRuns = new AtomicInteger();
        assertThatThrownBy(() -> locks.execute("lost", LockOptions.DEFAULTS.withLeaseTime(Duration.ofMillis(200)), () -> {
            await().atMost(Duration.ofSeconds(3)).until(() -> redisCommands.exists("lock:lost") == 0);
            holdElsewhere("lost");
            return locks.execute("lost", () -> nestedRuns.incrementAndGet());
        })).isInstanceOf(LockAcquisitionException.class)
                .hasMessageContaining("'lock:lost'")
                .hasRootCauseMessage("the lock held by the outer call on this thread was lost (its lease ran out or its "
                        + "key was taken away), so the nested call does not run");
        assertThat(nestedRuns).hasValue(0);
    }

    /** The watchdog variant: the key taken away behind the outer call's back. */
    @Test
    void nestedCallDoesNotReenterAWatchdogLockTakenAway() {
        AtomicInteger nestedRuns = new AtomicInteger();
        assertThatThrownBy(() -> locks.execute("gone", () -> {
            redisCommands.del("lock:gone");
            holdElsewhere("gone");
            return locks.execute("gone", () -> nestedRuns.incrementAndGet());
        })).isInstanceOf(LockAcquisitionException.class);
        assertThat(nestedRuns).hasValue(0);
    }

    /**
     * A '{' that opens no hash tag (or a '}' that closes none) would make every release fail on a cluster: refused
     * everywhere, before locking.
     */
    @Test
    void keysWithABraceThatOpensNoHashTagAreRefused() {
        for (String key : List.of("{}", "json{abc", "[{}]")) {
            assertThatThrownBy(() -> locks.execute(key, () -> "never")).as(key)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("opens no hash tag");
        }
        // and a '}' that closes none: the companions, named <prefix>:{<key>}, would hash by the key's text before it
        for (String key : List.of("a}b", "json}")) {
            assertThatThrownBy(() -> locks.execute(key, () -> "never")).as(key)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("closes no hash tag");
        }
        assertThat(locks.execute("tenant:{7}:order", () -> "tagged keys work")).isEqualTo("tagged keys work");
        assertThat(redisCommands.keys("lock:*")).isEmpty();
    }

    /**
     * A lock key in the namespace of the keys that go with locks (read/write hashes, FAIR queues, permits, fencing
     * counters) could be another lock's companion: refused before anything is written. Only reachable with an empty
     * {@code distlock.key-prefix}; the default prefix keeps every key out of it.
     */
    @Test
    void keysInTheCompanionNamespaceAreRefused() {
        for (String key : List.of("distlock_queue:{lock:x}", "distlock_rw:{lock:x}", "redisson_lock_token:{lock:x}")) {
            assertThatThrownBy(() -> provider.acquire(new io.github.distlock.spi.LockRequest(key, 0, 0, false,
                    io.github.distlock.LockType.REENTRANT, io.github.distlock.spi.LockOwner.next()))).as(key)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("Lock key '" + key + "' is in a namespace distlock keeps for the Redis keys that go "
                            + "with a lock (distlock_*, redisson_*): use another name, or a key prefix "
                            + "(distlock.key-prefix, default 'lock:')");
        }
        assertThat(redisCommands.keys("*distlock_*")).isEmpty();
        assertThat(redisCommands.keys("*redisson_*")).isEmpty();
    }

    /** Values with a toString() of their own that still print an identity inside. */
    @Test
    void identityTextInsideAValueIsRefused() {
        Object entity = new Object();
        for (Object value : List.of(Map.of("cart", entity), Optional.of(entity), new Holder(new long[] {1, 2}))) {
            assertThatThrownBy(() -> nested.keyed(value)).as(value.getClass().getSimpleName())
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("whose text contains an object's identity");
        }
        assertThat(nested.keyed(Map.of("a", 1))).as("values that print as values still work").isEqualTo("{a=1}");
        assertThat(redisCommands.keys("lock:*")).isEmpty();
    }

    /** A loss found by the monitor and seen again by the release is reported once. */
    @Test
    void aLossIsReportedOnce() {
        locks.run("once", () -> {
            redisCommands.del("lock:once");
            await().atMost(Duration.ofSeconds(3)).until(() -> recorder.events.contains("leaseLost:lock:once"));
        });
        locks.run("twice", () -> redisCommands.del("lock:twice"));
        await().during(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(3)).until(() ->
                recorder.events.stream().filter(e -> e.equals("leaseLost:lock:once")).count() == 1
                        && recorder.events.stream().filter(e -> e.equals("leaseLost:lock:twice")).count() == 1);
    }

    private void holdElsewhere(String key) {
        holders.add(HeldElsewhere.hold(locks, key));
    }

    /** A record whose own toString() prints its array component by identity. */
    record Holder(long[] ids) {
    }

    public static class Nested {

        @DistributedLock(key = "'k:' + #value")
        public String keyed(Object value) {
            return String.valueOf(value);
        }

        public <T> T call(Supplier<T> body) {
            return body.get();
        }
    }

    @TestConfiguration
    static class Config {

        @Bean
        Nested nested() {
            return new Nested();
        }

        @Bean
        RecordingLockListener recordingLockListener() {
            return new RecordingLockListener();
        }
    }
}

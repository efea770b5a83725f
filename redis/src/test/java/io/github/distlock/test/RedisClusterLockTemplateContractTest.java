package io.github.distlock.test;

import java.time.Duration;
import java.util.List;

import io.github.distlock.LockType;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.test.LockCallModel.Call;
import io.github.distlock.test.LockCallModel.Case;
import io.github.distlock.test.LockCallModel.Opts;
import io.github.distlock.test.LockCallModel.Shape;
import io.github.distlock.testsupport.RedisClusterExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * The template's contract, the generated calls among them, on a Redis Cluster (3 masters, 3 replicas): the keys of one
 * call, of one case and of the two instances fall in different slots on different masters.
 */
class RedisClusterLockTemplateContractTest extends LockTemplateContractTest {

    @RegisterExtension
    static final RedisClusterExtension redis = new RedisClusterExtension();

    private static RedissonClient client;
    private static RedissonClient secondClient;

    @BeforeAll
    static void connect() {
        client = newClient();
        secondClient = newClient();
    }

    @AfterAll
    static void disconnect() {
        if (client != null) {
            client.shutdown();
        }
        if (secondClient != null) {
            secondClient.shutdown();
        }
    }

    private static RedissonClient newClient() {
        Config config = new Config();
        config.setLockWatchdogTimeout(RedissonLockProviderContractTest.WATCHDOG.toMillis());
        config.useClusterServers()
                .addNodeAddress(redis.cluster().nodeUris().toArray(String[]::new))
                // a loaded 2-core machine can stall a reply for seconds; exclusion, not latency, is tested
                .setTimeout(10_000);
        return Redisson.create(config);
    }

    @Override
    protected LockProvider createProvider() {
        return new RedissonLockProvider(client);
    }

    /** Another application instance: a client of its own, so another Redisson id in every lock it holds. */
    @Override
    protected LockProvider createSecondInstance() {
        return new RedissonLockProvider(secondClient);
    }

    /**
     * The lease monitor's renewal scripts hold the keys of one slot each, routed to its master: a thousand locks
     * over some 500 slots stay held, and the ones taken away are reported lost (as on a single server:
     * ThousandsOfWatchdogLocksStayHeldAndLossesAreReportedTest).
     */
    @Test
    void thousandsOfLocksInManySlotsStayHeldAndExactlyTheKeysTakenAwayAreReportedLost() {
        try (RedissonLockProvider provider = new RedissonLockProvider(client)) {
            io.github.distlock.redisson.ThousandsOfHeldLocks.holdRenewAndReportExactlyTheKeysTakenAway(client, provider,
                    "held:", 1_000, RedissonLockProviderContractTest.WATCHDOG);
        }
    }

    /**
     * A client whose {@code NameMapper} moves keys to other slots: the renewal groups keys by the slot of the name they
     * are sent under (the mapped one), so no chunk spans slots; 1,500 keys put some 70 pairs in one slot before
     * mapping and in two after. Every lock stays held over three watchdog timeouts and none is reported lost.
     */
    @Test
    void watchdogLocksOfAClientWhoseNameMapperMovesKeysToOtherSlotsStayHeld() {
        Config config = new Config();
        config.setLockWatchdogTimeout(RedissonLockProviderContractTest.WATCHDOG.toMillis());
        config.setNameMapper(new org.redisson.config.NameMapper() {
            @Override
            public String map(String name) {
                return "app:" + name;
            }

            @Override
            public String unmap(String name) {
                return name.startsWith("app:") ? name.substring(4) : name;
            }
        });
        config.useClusterServers().addNodeAddress(redis.cluster().nodeUris().toArray(String[]::new)).setTimeout(10_000);
        RedissonClient mapped = Redisson.create(config);
        int count = 1_500;
        try (RedissonLockProvider provider = new RedissonLockProvider(mapped)) {
            java.util.Set<String> lost = java.util.concurrent.ConcurrentHashMap.newKeySet();
            List<java.util.concurrent.CompletableFuture<io.github.distlock.spi.LockHandle>> acquisitions =
                    new java.util.ArrayList<>();
            for (int i = 0; i < count; i++) {
                acquisitions.add(provider.acquire(new io.github.distlock.spi.LockRequest("nm:" + i, 0, 0, false,
                        LockType.REENTRANT, io.github.distlock.spi.LockOwner.next())));
            }
            List<io.github.distlock.spi.LockHandle> held = new java.util.ArrayList<>();
            for (int i = 0; i < count; i++) {
                io.github.distlock.spi.LockHandle handle = acquisitions.get(i)
                        .orTimeout(30, java.util.concurrent.TimeUnit.SECONDS).join();
                String key = "nm:" + i;
                handle.whenLost(reason -> lost.add(key + ": " + reason));
                held.add(handle);
            }
            Duration watchdog = RedissonLockProviderContractTest.WATCHDOG;
            org.awaitility.Awaitility.await().pollInterval(Duration.ofMillis(100)).during(watchdog.multipliedBy(3))
                    .atMost(watchdog.multipliedBy(6)).until(lost::isEmpty);
            // under their mapped names, seen through a client without the mapper
            for (int i = 0; i < count; i += 7) {
                org.assertj.core.api.Assertions.assertThat(client.getKeys().remainTimeToLive("app:nm:" + i))
                        .as("app:nm:" + i).isPositive();
            }
            held.forEach(handle -> handle.releaseAsync().join());
        }
        finally {
            mapped.shutdown();
        }
    }

    /** As on a single server: see RedissonLockTemplateContractTest#aFairLockReleasedAfterItsMinimumHoldWakesTheNextReentrantTaker. */
    @Test
    void aFairLockReleasedAfterItsMinimumHoldWakesTheNextReentrantTaker() throws Exception {
        for (int run = 0; run < 4; run++) {
            assertModelHolds(RedissonLockTemplateContractTest.fairReleasedAfterMinimumHold());
        }
    }

    /**
     * A WRITE lock whose release is deferred to a transaction's commit and then to its minimum hold: the third owner,
     * waiting already, takes it once released (shrunk from the generated cases; it missed Redisson's wake-up and slept
     * beside the free lock, see WriteReleaseWakesATakerBetweenItsAttemptsTest).
     */
    @Test
    void aWriteLockReleasedAfterCommitAndMinimumHoldIsTakenByTheNextOwner() throws Exception {
        for (int run = 0; run < 10; run++) {
            assertModelHolds(writeReleasedAfterCommitAndMinimumHold());
        }
    }

    /** The shrunk case of {@link #aWriteLockReleasedAfterCommitAndMinimumHoldIsTakenByTheNextOwner}. */
    static Case writeReleasedAfterCommitAndMinimumHold() {
        return new Case(null, List.of(new Call(List.of("a"), Shape.TX_COMMIT,
                new Opts(LockType.WRITE, false, 1, null, Duration.ofMillis(30_000L), Duration.ofMillis(3L)))));
    }
}

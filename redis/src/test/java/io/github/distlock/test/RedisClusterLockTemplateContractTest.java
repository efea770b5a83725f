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

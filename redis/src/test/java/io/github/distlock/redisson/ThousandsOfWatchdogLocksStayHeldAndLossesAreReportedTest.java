package io.github.distlock.redisson;

import java.time.Duration;

import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

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
}

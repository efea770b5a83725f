package io.github.distlock.zookeeper;

import java.time.Duration;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The health indicator's question on ZooKeeper: a ping answers {@code false} within its timeout, without throwing,
 * while the server is down, and {@code true} again once it is back.
 */
@Timeout(60)
class ZooKeeperPingFollowsTheServerTest {

    private static final Duration PING_TIMEOUT = Duration.ofSeconds(1);

    @Test
    void pingIsFalseWithinItsTimeoutWhileTheServerIsStoppedAndTrueAfterItsRestart() throws Exception {
        try (TestingServer server = ZooKeeperTesting.startServer();
                CuratorFramework client = ZooKeeperTesting.connect(server.getConnectString());
                ZooKeeperLockProvider provider = new ZooKeeperLockProvider(client, "/distlock-ping")) {
            assertThat(provider.ping(PING_TIMEOUT)).as("ping while the server runs").isTrue();

            server.stop();
            for (int i = 0; i < 2; i++) {
                // the first before the client has noticed (a round trip that times out), the second after
                long start = System.nanoTime();
                boolean answered = provider.ping(PING_TIMEOUT);
                Duration took = Duration.ofNanos(System.nanoTime() - start);
                assertThat(answered).as("ping %d while the server is stopped", i + 1).isFalse();
                assertThat(took).as("how long ping %d took", i + 1).isLessThan(PING_TIMEOUT.plusMillis(500));
            }

            server.restart();
            await().atMost(Duration.ofSeconds(20)).until(() -> provider.ping(PING_TIMEOUT));
        }
    }
}

package io.github.distlock.zookeeper;

import java.time.Duration;

import io.github.distlock.LeaseLostPolicy;
import io.github.distlock.test.InterruptOnLeaseLossCheck;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.KillSession;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A holder whose ZooKeeper session expires while its code runs: {@link LeaseLostPolicy#INTERRUPT} stops the code as
 * soon as the loss is reported, and the call fails naming the key.
 */
@Timeout(60)
class ZooKeeperExpiredSessionInterruptsTheRunningCodeTest {

    @Test
    void anExpiredSessionInterruptsTheCodeAtOnce() throws Exception {
        try (TestingServer server = ZooKeeperTesting.startServer()) {
            CuratorFramework client = ZooKeeperTesting.connect(server.getConnectString());
            try (ZooKeeperLockProvider provider = new ZooKeeperLockProvider(client, "/distlock-stop")) {
                InterruptOnLeaseLossCheck.on(provider).run("expiring", Duration.ofMillis(500),
                        () -> KillSession.kill(client.getZookeeperClient().getZooKeeper()), () -> { });
            }
            finally {
                client.close();
            }
        }
    }
}

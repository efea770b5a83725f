package io.github.distlock.zookeeper;

import io.github.distlock.spi.LockProvider;
import io.github.distlock.test.LockTemplateContractTest;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The template's multi-key locks, re-entry, interrupts and give-backs on the ZooKeeper provider and a real server. */
class ZooKeeperLockTemplateContractTest extends LockTemplateContractTest {

    private static TestingServer server;
    private static CuratorFramework client;

    @BeforeAll
    static void start() throws Exception {
        server = ZooKeeperTesting.startServer();
        client = ZooKeeperTesting.connect(server.getConnectString());
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (client != null) {
                client.close();
            }
        }
        finally {
            if (server != null) {
                server.close();
            }
        }
    }

    @Override
    protected LockProvider createProvider() {
        return new ZooKeeperLockProvider(client, "/distlock-template");
    }
}

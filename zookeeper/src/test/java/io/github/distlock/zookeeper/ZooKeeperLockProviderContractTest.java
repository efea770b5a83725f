package io.github.distlock.zookeeper;

import io.github.distlock.spi.LockInstance;
import io.github.distlock.spi.LockProvider;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The provider contract on a single ZooKeeper server, with another application instance on a client (session) of its
 * own for the operator's tests.
 */
class ZooKeeperLockProviderContractTest extends ZooKeeperContractTestBase {

    private static TestingServer server;
    /** The other instance's session, shared by the other instances of every test as the main client is. */
    private static CuratorFramework otherClient;

    @BeforeAll
    static void startServer() throws Exception {
        server = ZooKeeperTesting.startServer();
        client = ZooKeeperTesting.connect(server.getConnectString());
        otherClient = ZooKeeperTesting.connect(server.getConnectString());
    }

    @AfterAll
    static void stopServer() throws Exception {
        try {
            for (CuratorFramework each : new CuratorFramework[] {client, otherClient}) {
                if (each != null) {
                    each.close();
                }
            }
        }
        finally {
            if (server != null) {
                server.close();
            }
        }
    }

    @Override
    protected LockProvider createOtherInstance() {
        ZooKeeperLockProvider other = new ZooKeeperLockProvider(otherClient, BASE_PATH);
        other.announce(new LockInstance("contract-other", "host-of-the-other", 4343));
        return other;
    }

    @Override
    String connectString() {
        return server.getConnectString();
    }

    @Override
    int serverPort() {
        return server.getPort();
    }
}

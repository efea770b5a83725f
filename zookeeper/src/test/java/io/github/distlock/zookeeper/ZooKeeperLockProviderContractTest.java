package io.github.distlock.zookeeper;

import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The provider contract on a single ZooKeeper server. */
class ZooKeeperLockProviderContractTest extends ZooKeeperContractTestBase {

    private static TestingServer server;

    @BeforeAll
    static void startServer() throws Exception {
        server = ZooKeeperTesting.startServer();
        client = ZooKeeperTesting.connect(server.getConnectString());
    }

    @AfterAll
    static void stopServer() throws Exception {
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
    String connectString() {
        return server.getConnectString();
    }

    @Override
    int serverPort() {
        return server.getPort();
    }
}

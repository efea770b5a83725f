package io.github.distlock.zookeeper;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

/** One ZooKeeper server and client per test class, and a provider per test under {@link #basePath()}. */
abstract class ZooKeeperServerTestBase {

    static TestingServer server;
    static CuratorFramework client;
    ZooKeeperLockProvider provider;

    /** The base path of this class's providers, apart from every other test class's. */
    abstract String basePath();

    @BeforeAll
    static void startServer() throws Exception {
        server = ZooKeeperTesting.startServer();
        client = ZooKeeperTesting.connect(server.getConnectString());
    }

    @AfterAll
    static void stopServer() throws Exception {
        try {
            client.close();
        }
        finally {
            server.close();
        }
    }

    @BeforeEach
    void createProvider() {
        provider = new ZooKeeperLockProvider(client, basePath());
    }

    @AfterEach
    void closeProvider() {
        provider.close();
    }
}

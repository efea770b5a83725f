package io.github.distlock.sample;

import java.util.List;

import org.apache.curator.test.TestingServer;

/** The three-instance flash sale with its locks on one ZooKeeper server ({@code distlock.backend=zookeeper}). */
class MultiInstanceZooKeeperTest extends MultiInstanceSale {

    private TestingServer zookeeper;

    @Override
    List<String> startLockBackend() throws Exception {
        zookeeper = new TestingServer(true);
        return List.of("--distlock.backend=zookeeper", "--distlock.zookeeper.connect-string="
                + zookeeper.getConnectString(), "--sample.embedded-redis.enabled=false",
                "--management.health.redis.enabled=false");
    }

    @Override
    void stopLockBackend() throws Exception {
        if (zookeeper != null) {
            zookeeper.close();
        }
    }
}

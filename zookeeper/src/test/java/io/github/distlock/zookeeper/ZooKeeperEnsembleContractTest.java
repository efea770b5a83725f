package io.github.distlock.zookeeper;

import java.io.IOException;

import io.github.distlock.testsupport.ZooKeeperRole;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.apache.zookeeper.CreateMode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The provider contract on a 3-server ensemble whose leader was stopped before the tests: the two left elect a new
 * leader and serve as a quorum; clients are given all three addresses, the dead one included, as an application's
 * configuration would still list it.
 */
class ZooKeeperEnsembleContractTest extends ZooKeeperContractTestBase {

    private static TestingCluster cluster;
    private static InstanceSpec stopped;
    private static InstanceSpec alive;

    @BeforeAll
    static void startEnsembleAndStopItsLeader() throws Exception {
        cluster = new TestingCluster(ZooKeeperTesting.spec(), ZooKeeperTesting.spec(), ZooKeeperTesting.spec());
        cluster.start();
        try (var probe = ZooKeeperTesting.connect(cluster.getConnectString())) {
            probe.create().forPath("/probe-before");
        }
        stopped = cluster.getInstances().stream().filter(spec -> "leader".equals(mode(spec))).findFirst()
                .orElseThrow(() -> new AssertionError("no leader among " + cluster.getInstances()));
        assertThat(cluster.killServer(stopped)).as("stopped the leader %s", stopped).isTrue();
        alive = cluster.getInstances().stream().filter(spec -> !spec.equals(stopped)).findFirst().orElseThrow();
        client = ZooKeeperTesting.connect(cluster.getConnectString());
        // a write needs a quorum with a leader: the two left have elected one
        client.create().withMode(CreateMode.EPHEMERAL).forPath("/probe-after");
        assertThat(cluster.getInstances().stream().filter(spec -> !spec.equals(stopped)).map(ZooKeeperEnsembleContractTest::mode))
                .as("modes of the servers left").containsExactlyInAnyOrder("leader", "follower");
    }

    @AfterAll
    static void stopEnsemble() throws IOException {
        try {
            if (client != null) {
                client.close();
            }
        }
        finally {
            if (cluster != null) {
                cluster.close();
            }
        }
    }

    /** A server's role: "leader", "follower", or null when down. */
    static String mode(InstanceSpec spec) {
        return ZooKeeperRole.of(spec.getPort());
    }

    // The operator's calls (holders, force release, closing keys) are the same requests on one server and on a
    // quorum: they are tested on the single server, and left out here (overridden without @Test), for CI's time.

    @Override
    protected void holdersNameEveryLiveHoldInTheOwnerFormatOfTheEndpoint() {
    }

    @Override
    protected void aForceReleaseEvictsTellsTheHolderAndFreesTheKey(boolean onAnotherInstance, boolean fixedLease) {
    }

    @Override
    protected void aForceReleaseFromAnExpectedOwnerTakesOnlyThatOwnersHolds() {
    }

    @Override
    protected void closingAKeyFailsItsWaitersAtOnceUntilReopened() {
    }

    // which node a key names does not depend on the number of servers: tested on the single server (15 s here)
    @Override
    protected void aKeyNamedLikeAnotherKeysCompanionIsALockOfItsOwn() {
    }

    @Override
    String connectString() {
        return cluster.getConnectString();
    }

    @Override
    int serverPort() {
        return alive.getPort();
    }
}

package io.github.distlock.zookeeper;

import java.time.Duration;
import java.util.List;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingServer;

import static org.assertj.core.api.Assertions.assertThat;

/** Real ZooKeeper servers (Curator's testing server, in this JVM, on free loopback ports) and clients for the tests. */
final class ZooKeeperTesting {

    /**
     * The session timeout of every client here, which is how long a dead holder's lock lives on: the watchdog timeout
     * of the contract suite. Short, because the suite waits for it; long enough that a loaded 2-core machine does not
     * miss a heartbeat (the client gives up on a silent server after two thirds of it, and reports SUSPENDED).
     */
    static final Duration SESSION_TIMEOUT = Duration.ofSeconds(3);

    /**
     * A server's tick: sessions expire on tick boundaries, and the server grants session timeouts of 1 to 20 ticks
     * (Curator's testing config), so 200 ms lets {@link #SESSION_TIMEOUT} through unchanged and expires it promptly.
     */
    static final int TICK_MILLIS = 200;

    private ZooKeeperTesting() {
    }

    /** A spec for a server on free loopback ports, with a temporary data directory deleted when it closes. */
    static InstanceSpec spec() {
        return new InstanceSpec(null, -1, -1, -1, true, -1, TICK_MILLIS, -1);
    }

    /** A started single server. */
    static TestingServer startServer() throws Exception {
        return new TestingServer(spec(), true);
    }

    /** A started client of its own session, connected (fails the test when it could not connect). */
    static CuratorFramework connect(String connectString) throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.builder().connectString(connectString)
                .sessionTimeoutMs((int) SESSION_TIMEOUT.toMillis())
                .connectionTimeoutMs(10_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5, 1_000))
                .build();
        client.start();
        if (!client.blockUntilConnected(20, java.util.concurrent.TimeUnit.SECONDS)) {
            client.close();
            throw new AssertionError("could not connect to ZooKeeper at " + connectString);
        }
        return client;
    }

    /** The lock nodes under a lock path, as the server has them now (none when the path does not exist). */
    static List<String> lockNodes(CuratorFramework client, String lockPath) throws Exception {
        if (client.checkExists().forPath(lockPath) == null) {
            return List.of();
        }
        return LockPaths.sortedLockNodes(client.getChildren().forPath(lockPath));
    }

    /** The negotiated session timeout of a connected client. */
    static int negotiatedSessionTimeout(CuratorFramework client) throws Exception {
        int timeout = client.getZookeeperClient().getZooKeeper().getSessionTimeout();
        assertThat(timeout).as("the session timeout the server granted").isPositive();
        return timeout;
    }
}

package io.github.distlock.zookeeper;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.test.LockProviderContractTest;
import io.github.distlock.testsupport.TcpProxy;
import org.apache.curator.framework.CuratorFramework;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The provider contract on a real ZooKeeper: one client (session) per test class for the providers under test, as an
 * application has one; dead holders on sessions of their own.
 */
abstract class ZooKeeperContractTestBase extends LockProviderContractTest {

    static final String BASE_PATH = "/distlock-contract";

    /** The shared client of the providers under test; set by the subclass once its servers run. */
    static CuratorFramework client;

    /** Where the servers are. */
    abstract String connectString();

    /** The client port of a running server, for a proxy in front of it. */
    abstract int serverPort();

    @Override
    protected LockProvider createProvider() {
        return new ZooKeeperLockProvider(client, BASE_PATH);
    }

    private ZooKeeperLockProvider zooKeeper() {
        return (ZooKeeperLockProvider) provider();
    }

    /** The session timeout: a dead holder's lock lives as long as its session. */
    @Override
    protected Duration watchdogTimeout() {
        return ZooKeeperTesting.SESSION_TIMEOUT;
    }

    /**
     * A holder killed with SIGKILL: a session of its own, through a proxy that is then closed, so that its connection
     * ends as a crashed process's does and nothing tells the server that the session is over: the lock lives on until
     * the server expires the session. (Curator's {@code KillSession} is no stand-in here: after it, the client may
     * still close the old session properly, which frees the lock at once.)
     */
    @Override
    protected void acquireAndAbandon(LockRequest request) {
        try (TcpProxy proxy = TcpProxy.start(serverPort());
                CuratorFramework dying = ZooKeeperTesting.connect("127.0.0.1:" + proxy.port());
                ZooKeeperLockProvider other = new ZooKeeperLockProvider(dying, BASE_PATH)) {
            LockHandle handle = other.acquire(request).join();
            assertThat(handle).as("the lock to abandon").isNotNull();
            // the process dies: its timers (no lease end, no release) and its connections
            other.close();
            proxy.close();
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new AssertionError(ex);
        }
    }

    /** Closed keys are kept in ZooKeeper, for every type. */
    @Override
    protected boolean closesKeys() {
        return true;
    }

    @Override
    protected boolean closesKeys(LockType type) {
        return true;
    }

    /** An operator deleting the lock's nodes. */
    @Override
    protected void expireBehindItsBack(String key) {
        String lockPath = zooKeeper().lockPath(key);
        try {
            List<String> nodes = ZooKeeperTesting.lockNodes(client, lockPath);
            assertThat(nodes).as("lock nodes of %s", key).isNotEmpty();
            for (String node : nodes) {
                client.delete().forPath(lockPath + "/" + node);
            }
        }
        catch (Exception ex) {
            throw new AssertionError(ex);
        }
    }

    /** The lock nodes under the key: the holder's and one per queued waiter. */
    @Override
    protected void awaitQueued(LockType type, String key, int count, CompletableFuture<LockHandle> latest) {
        String lockPath = zooKeeper().lockPath(key);
        await().atMost(slack()).until(() -> ZooKeeperTesting.lockNodes(client, lockPath).size() >= count + 1);
    }
}

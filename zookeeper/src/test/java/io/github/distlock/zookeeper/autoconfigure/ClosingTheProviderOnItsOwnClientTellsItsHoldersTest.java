package io.github.distlock.zookeeper.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.autoconfigure.DistlockProperties;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.zookeeper.ZooKeeperLockProvider;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The provider built on a client of its own (distlock.zookeeper.connect-string) closes that client when it is
 * closed (application shutdown), which ends the session and frees every lock still held; a holder still running its
 * method must be told, or two run at once with one of them unaware.
 */
@Timeout(60)
class ClosingTheProviderOnItsOwnClientTellsItsHoldersTest {

    @Test
    void closingTheProviderOnItsOwnClientTellsItsHoldersTheirLocksAreGone() throws Exception {
        try (TestingServer server = new TestingServer(new InstanceSpec(null, -1, -1, -1, true, -1, 200, -1), true);
                CuratorFramework other = CuratorFrameworkFactory.newClient(server.getConnectString(), new RetryOneTime(100))) {
            other.start();
            DistlockZooKeeperProperties zooKeeper = new DistlockZooKeeperProperties();
            zooKeeper.setConnectString(server.getConnectString());
            DistlockProperties distlock = new DistlockProperties();
            distlock.setWatchdogTimeout(Duration.ofSeconds(3));
            ZooKeeperLockProvider closing = DistlockZooKeeperAutoConfiguration.ownClientProvider(zooKeeper, distlock);
            ZooKeeperLockProvider otherSide = new ZooKeeperLockProvider(other, DistlockZooKeeperProperties.DEFAULT_BASE_PATH);
            try {
                LockHandle holder = closing.acquire(new LockRequest("closing", 0, 0, false, LockType.REENTRANT,
                        LockOwner.next())).get(10, TimeUnit.SECONDS);
                List<String> losses = new CopyOnWriteArrayList<>();
                holder.whenLost(losses::add);

                closing.close();
                LockHandle next = otherSide.acquire(new LockRequest("closing", Duration.ofSeconds(10).toNanos(), 0, false,
                        LockType.REENTRANT, LockOwner.next())).get(20, TimeUnit.SECONDS);
                assertThat(next).as("the lock once its holder's provider closed").isNotNull();
                assertThat(next.release()).isTrue();
                await().atMost(Duration.ofSeconds(10)).until(() -> !losses.isEmpty());
                assertThat(losses).hasSize(1);
                assertThat(losses.get(0)).contains("'closing'").contains("closed");
            }
            finally {
                closing.close();
                otherSide.close();
            }
        }
    }
}

package io.github.distlock.zookeeper;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.TcpProxy;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.test.KillSession;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * A holder's session in trouble: cut off (partition), expired, or suspended while the server restarts. Each test has
 * its own server; the holder has a session of its own, the other owner and the inspecting client another.
 */
@Timeout(120)
class ZooKeeperSessionLossTest {

    private static final String BASE = "/distlock-loss";
    private static final Duration SLACK = Duration.ofSeconds(10);

    private TestingServer server;
    private CuratorFramework admin;
    private ZooKeeperLockProvider other;
    private final List<AutoCloseable> closeables = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() throws Exception {
        server = ZooKeeperTesting.startServer();
        admin = ZooKeeperTesting.connect(server.getConnectString());
        other = new ZooKeeperLockProvider(admin, BASE);
    }

    @AfterEach
    void stop() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            try {
                closeables.get(i).close();
            }
            catch (Exception ignored) {
                // the test may have left it half-closed
            }
        }
        other.close();
        admin.close();
        server.close();
    }

    private <T extends AutoCloseable> T closeLater(T closeable) {
        closeables.add(closeable);
        return closeable;
    }

    private static LockRequest request(String key, Duration wait) {
        return new LockRequest(key, wait.toNanos(), 0, false, LockType.REENTRANT, LockOwner.next());
    }

    private static LockHandle acquire(ZooKeeperLockProvider provider, LockRequest request) throws Exception {
        return provider.acquire(request).get(Duration.ofNanos(request.waitNanos()).plus(SLACK).toMillis(),
                TimeUnit.MILLISECONDS);
    }

    /** The states a client went through, in order. */
    private static List<ConnectionState> recordStates(CuratorFramework client) {
        List<ConnectionState> states = new CopyOnWriteArrayList<>();
        client.getConnectionStateListenable().addListener((c, state) -> states.add(state));
        return states;
    }

    /** Loss reports of a handle, in order. */
    private static List<String> recordLosses(LockHandle handle) {
        List<String> losses = new CopyOnWriteArrayList<>();
        handle.whenLost(losses::add);
        return losses;
    }

    /**
     * A network partition: the holder's connection stalls. The holder is told (on SUSPENDED, before the server expires
     * its session and anyone else can have the lock), once; the lock goes to the next owner when the session expires;
     * when the partition heals the holder learns that its session expired (LOST) without being told again, and its
     * release answers false and leaves the next holder's lock alone.
     */
    @Test
    void aPartitionedHolderIsToldOnceBeforeAnyoneElseGetsTheLockAndItsReleaseLeavesTheNextHolderAlone() throws Exception {
        TcpProxy proxy = closeLater(TcpProxy.start(server.getPort()));
        CuratorFramework holderClient = closeLater(ZooKeeperTesting.connect("127.0.0.1:" + proxy.port()));
        List<ConnectionState> states = recordStates(holderClient);
        ZooKeeperLockProvider holderSide = closeLater(new ZooKeeperLockProvider(holderClient, BASE));
        String key = "partitioned";
        LockHandle holder = acquire(holderSide, request(key, Duration.ZERO));
        assertThat(holder).isNotNull();
        List<String> losses = recordLosses(holder);

        proxy.pause();
        long cut = System.nanoTime();
        assertThat(acquire(other, request(key, Duration.ZERO))).as("the lock right after the partition").isNull();
        CompletableFuture<LockHandle> next = other.acquire(request(key, ZooKeeperTesting.SESSION_TIMEOUT.plus(SLACK)));
        await().atMost(ZooKeeperTesting.SESSION_TIMEOUT.plus(SLACK)).until(() -> !losses.isEmpty());
        long told = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cut);
        assertThat(next).as("the next owner, when the holder is told").isNotDone();
        assertThat(losses.get(0)).contains("partitioned").contains("SUSPENDED");
        assertThat(holder.lostWhileHeld()).isTrue();
        assertThat(holder.stillHeld()).isFalse();

        LockHandle nextHolder = next.get(ZooKeeperTesting.SESSION_TIMEOUT.plus(SLACK).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(nextHolder).as("the next owner, once the holder's session expired").isNotNull();
        System.out.println("MEASURED zookeeper partition: holder told " + told + " ms after the cut, next owner had the lock "
                + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cut) + " ms after it (session timeout "
                + ZooKeeperTesting.SESSION_TIMEOUT.toMillis() + " ms)");
        proxy.resume();
        await().atMost(SLACK).until(() -> states.contains(ConnectionState.LOST));
        await().atMost(SLACK).until(() -> states.get(states.size() - 1) == ConnectionState.RECONNECTED);
        assertThat(losses).as("loss reports across SUSPENDED, LOST, RECONNECTED").hasSize(1);

        assertThat(holder.release()).as("the stale holder's release").isFalse();
        String lockPath = other.lockPath(key);
        assertThat(ZooKeeperTesting.lockNodes(admin, lockPath)).as("lock nodes after the stale release")
                .containsExactly(nodeName(nextHolder));
        assertThat(acquire(other, request(key, Duration.ZERO))).as("a newcomer while the next holder holds").isNull();
        assertThat(nextHolder.release()).isTrue();
        assertThat(ZooKeeperTesting.lockNodes(admin, lockPath)).isEmpty();
    }

    /** Curator's test tool expires the session: the holder is told once (LOST), and the lock is not left behind. */
    @Test
    void anExpiredSessionIsReportedLostOnce() throws Exception {
        CuratorFramework holderClient = closeLater(ZooKeeperTesting.connect(server.getConnectString()));
        List<ConnectionState> states = recordStates(holderClient);
        ZooKeeperLockProvider holderSide = closeLater(new ZooKeeperLockProvider(holderClient, BASE));
        LockHandle holder = acquire(holderSide, request("expired", Duration.ZERO));
        List<String> losses = recordLosses(holder);

        KillSession.kill(holderClient.getZookeeperClient().getZooKeeper());
        await().atMost(SLACK).until(() -> !losses.isEmpty());
        await().atMost(SLACK).until(() -> states.contains(ConnectionState.RECONNECTED));
        assertThat(losses).hasSize(1);
        assertThat(losses.get(0)).contains("expired").contains("LOST");
        assertThat(holder.release()).isFalse();
        LockHandle next = acquire(other, request("expired", ZooKeeperTesting.SESSION_TIMEOUT.plus(SLACK)));
        assertThat(next).as("the lock after the expired holder").isNotNull();
        assertThat(next.release()).isTrue();
    }

    /**
     * An instance's announcement is an ephemeral node, which goes with an expired session: it is written again in the
     * next session, so that its holders are still named on the other instances.
     */
    @Test
    void anAnnouncementIsWrittenAgainInTheNextSession() throws Exception {
        CuratorFramework holderClient = closeLater(ZooKeeperTesting.connect(server.getConnectString()));
        List<ConnectionState> states = recordStates(holderClient);
        ZooKeeperLockProvider holderSide = closeLater(new ZooKeeperLockProvider(holderClient, BASE));
        io.github.distlock.spi.LockInstance self = new io.github.distlock.spi.LockInstance("orders", "host-a", 7);
        holderSide.announce(self);
        String owner = holderSide.ownerName(0);
        String node = BASE + "-instances/" + owner.substring(0, owner.lastIndexOf(':'));
        await().atMost(SLACK).until(() -> admin.checkExists().forPath(node) != null);
        long firstSession = admin.checkExists().forPath(node).getEphemeralOwner();

        KillSession.kill(holderClient.getZookeeperClient().getZooKeeper());
        await().atMost(SLACK).until(() -> states.contains(ConnectionState.RECONNECTED));
        await().atMost(SLACK).until(() -> {
            org.apache.zookeeper.data.Stat stat = admin.checkExists().forPath(node);
            return stat != null && stat.getEphemeralOwner() != firstSession;
        });
        LockHandle held = acquire(holderSide, request("announced", Duration.ZERO));
        assertThat(other.holders("announced")).singleElement()
                .satisfies(holder -> assertThat(holder.instance()).isEqualTo(self));
        assertThat(held.release()).isTrue();
    }

    /** A waiter whose session expires fails (its place in the queue is gone) and leaves no node behind. */
    @Test
    void aWaiterWhoseSessionExpiresFailsAndLeavesNoNode() throws Exception {
        LockHandle holder = acquire(other, request("waited", Duration.ZERO));
        CuratorFramework waiterClient = closeLater(ZooKeeperTesting.connect(server.getConnectString()));
        ZooKeeperLockProvider waiterSide = closeLater(new ZooKeeperLockProvider(waiterClient, BASE));
        CompletableFuture<LockHandle> waiter = waiterSide.acquire(request("waited", Duration.ofSeconds(60)));
        String lockPath = other.lockPath("waited");
        await().atMost(SLACK).until(() -> ZooKeeperTesting.lockNodes(admin, lockPath).size() == 2);

        KillSession.kill(waiterClient.getZookeeperClient().getZooKeeper());
        assertThatThrownBy(() -> waiter.get(SLACK.toMillis(), TimeUnit.MILLISECONDS))
                .isInstanceOf(ExecutionException.class).cause().isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("session was lost").hasMessageContaining("'waited'");
        await().atMost(ZooKeeperTesting.SESSION_TIMEOUT.plus(SLACK))
                .until(() -> ZooKeeperTesting.lockNodes(admin, lockPath).equals(List.of(nodeName(holder))));
        assertThat(holder.release()).isTrue();
    }

    /**
     * The server restarts while the lock is held: the holder is told on SUSPENDED; its session survives the restart
     * (sessions are restored from the server's data), so its node is still there when the connection is back. Its
     * release must delete it (else the lock stays taken for as long as the session lives) and answers false: the
     * holder was told it had lost the lock, and may have stopped half-way.
     */
    @Test
    void aHolderToldOnSuspendedWhoseSessionSurvivesFreesTheLockOnRelease() throws Exception {
        CuratorFramework holderClient = closeLater(ZooKeeperTesting.connect(server.getConnectString()));
        List<ConnectionState> states = recordStates(holderClient);
        ZooKeeperLockProvider holderSide = closeLater(new ZooKeeperLockProvider(holderClient, BASE));
        LockHandle holder = acquire(holderSide, request("restart", Duration.ZERO));
        List<String> losses = recordLosses(holder);
        long sessionId = holderClient.getZookeeperClient().getZooKeeper().getSessionId();

        server.stop();
        await().atMost(SLACK).until(() -> !losses.isEmpty());
        server.restart();
        await().atMost(SLACK).until(() -> states.contains(ConnectionState.RECONNECTED));
        assertThat(states).doesNotContain(ConnectionState.LOST);
        assertThat(holderClient.getZookeeperClient().getZooKeeper().getSessionId()).as("the same session").isEqualTo(sessionId);
        String lockPath = other.lockPath("restart");
        assertThat(ZooKeeperTesting.lockNodes(admin, lockPath)).as("the holder's node, after the restart").hasSize(1);
        assertThat(losses).hasSize(1);
        assertThat(losses.get(0)).contains("SUSPENDED");

        assertThat(holder.release()).isFalse();
        assertThat(ZooKeeperTesting.lockNodes(admin, lockPath)).as("lock nodes after the release").isEmpty();
        LockHandle next = acquire(other, request("restart", Duration.ZERO));
        assertThat(next).as("the lock right after the release").isNotNull();
        assertThat(next.release()).isTrue();
        assertThat(losses).hasSize(1);
    }

    private static String nodeName(LockHandle handle) {
        String path = ((ZooKeeperLockHandle) handle).path();
        return path.substring(path.lastIndexOf('/') + 1);
    }
}

package io.github.distlock.zookeeper;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.TcpProxy;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** What the locks leave in ZooKeeper: their nodes, tokens and order, looked at on the server. */
@Timeout(60)
class ZooKeeperLockNodesTest extends ZooKeeperServerTestBase {

    private static final String BASE = "/distlock-nodes";
    private static final Duration SLACK = Duration.ofSeconds(10);

    @Override
    String basePath() {
        return BASE;
    }

    private LockHandle acquire(String key, Duration wait, Duration lease, LockType type, boolean fenced) throws Exception {
        return provider.acquire(new LockRequest(key, wait.toNanos(), lease.toNanos(), fenced, type, LockOwner.next()))
                .get(wait.plus(SLACK).toMillis(), TimeUnit.MILLISECONDS);
    }

    private List<String> nodes(String key) throws Exception {
        return ZooKeeperTesting.lockNodes(client, provider.lockPath(key));
    }

    /**
     * The case a token taken from the node itself (its sequence, or the zxid that created it) gets wrong: a fenced
     * waiter queued before the holder issued itself a token must still get a higher token than that one, since it
     * holds after it. The token is the zxid of the listing that showed the waiter first, which comes after the
     * holder's node was deleted, and so after every write the holder made.
     */
    @Test
    void aWaiterQueuedBeforeTheHoldersNewTokenGetsAHigherOne() throws Exception {
        LockHandle holder = acquire("fence", Duration.ZERO, Duration.ZERO, LockType.REENTRANT, false);
        CompletableFuture<LockHandle> waiter = provider.acquire(new LockRequest("fence", Duration.ofSeconds(30).toNanos(),
                0, true, LockType.REENTRANT, LockOwner.next()));
        await().atMost(SLACK).until(() -> nodes("fence").size() == 2);
        Stat waiterNode = client.checkExists().forPath(provider.lockPath("fence") + "/" + nodes("fence").get(1));
        long holdersToken = holder.newFencingToken();
        assertThat(holdersToken).as("the holder's token, issued after the waiter queued")
                .isGreaterThan(waiterNode.getCzxid());
        assertThat(holder.release()).isTrue();
        LockHandle next = waiter.get(SLACK.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).as("the waiter's token, once it holds").isGreaterThan(holdersToken);
        assertThat(next.release()).isTrue();
    }

    /** Tokens are zxids: a later holder's is higher even when the key's node was removed and made again in between. */
    @Test
    void tokensKeepGrowingWhenTheKeysNodeIsRemovedAndMadeAgain() throws Exception {
        LockHandle first = acquire("recreated", Duration.ZERO, Duration.ZERO, LockType.WRITE, true);
        assertThat(first.release()).isTrue();
        // what ZooKeeper's container clean-up does to an unused key: the sequence under it starts again at 0
        client.delete().forPath(provider.lockPath("recreated"));
        LockHandle second = acquire("recreated", Duration.ZERO, Duration.ZERO, LockType.WRITE, true);
        assertThat(nodes("recreated").get(0)).endsWith("__WRIT__0000000000");
        assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
        assertThat(second.release()).isTrue();
    }

    /** A waiter that gives up deletes its node before it answers: nothing of it is left in the queue. */
    @Test
    void aWaiterThatGivesUpOrIsCancelledLeavesNoNode() throws Exception {
        LockHandle holder = acquire("queue", Duration.ZERO, Duration.ZERO, LockType.FAIR, false);
        assertThat(acquire("queue", Duration.ofMillis(200), Duration.ZERO, LockType.FAIR, false)).isNull();
        assertThat(nodes("queue")).as("nodes after a waiter gave up").hasSize(1);
        CompletableFuture<LockHandle> cancelled = provider.acquire(new LockRequest("queue", Duration.ofSeconds(30).toNanos(),
                0, false, LockType.FAIR, LockOwner.next()));
        await().atMost(SLACK).until(() -> nodes("queue").size() == 2);
        cancelled.cancel(true);
        await().atMost(SLACK).until(() -> nodes("queue").size() == 1);
        assertThat(holder.release()).isTrue();
        assertThat(nodes("queue")).isEmpty();
    }

    /** A wait of 0 on a visibly held lock answers from one listing: it never queues a node. */
    @Test
    void aTryOnAHeldLockQueuesNoNode() throws Exception {
        LockHandle holder = acquire("try", Duration.ZERO, Duration.ZERO, LockType.REENTRANT, false);
        Stat before = client.checkExists().forPath(provider.lockPath("try"));
        assertThat(acquire("try", Duration.ZERO, Duration.ZERO, LockType.REENTRANT, false)).isNull();
        Stat after = client.checkExists().forPath(provider.lockPath("try"));
        assertThat(after.getCversion()).as("children created or deleted under the key by the try")
                .isEqualTo(before.getCversion());
        assertThat(holder.release()).isTrue();
    }

    /** A fixed lease ends with the node deleted, at its end, without a loss report; the late release answers false. */
    @Test
    void aFixedLeaseEndsWithItsNodeDeletedAndNoLossReport() throws Exception {
        Duration lease = Duration.ofMillis(700);
        long start = System.nanoTime();
        LockHandle holder = acquire("lease", Duration.ZERO, lease, LockType.REENTRANT, false);
        List<String> losses = new java.util.concurrent.CopyOnWriteArrayList<>();
        holder.whenLost(losses::add);
        assertThat(nodes("lease")).hasSize(1);
        await().atMost(lease.plus(SLACK)).until(() -> nodes("lease").isEmpty());
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("when the node went")
                .isGreaterThanOrEqualTo(lease.toMillis());
        assertThat(holder.stillHeld()).isFalse();
        assertThat(holder.release()).isFalse();
        assertThat(losses).as("an expected end is no loss").isEmpty();
    }

    /**
     * The nodes are Curator's read/write lock's: a Curator write lock on the key's path excludes every type of ours,
     * a Curator read lock shares with our READ and excludes our WRITE.
     */
    @Test
    void curatorsReadWriteLockOnTheSamePathExcludesAndIsExcluded() throws Exception {
        String key = "shared with curator";
        InterProcessReadWriteLock curatorLock = new InterProcessReadWriteLock(client, provider.lockPath(key));
        assertThat(curatorLock.writeLock().acquire(5, TimeUnit.SECONDS)).isTrue();
        try {
            for (LockType type : LockType.values()) {
                assertThat(acquire(key, Duration.ZERO, Duration.ZERO, type, false)).as("%s while Curator writes", type).isNull();
            }
        }
        finally {
            curatorLock.writeLock().release();
        }
        LockHandle reader = acquire(key, Duration.ZERO, Duration.ZERO, LockType.READ, false);
        assertThat(curatorLock.readLock().acquire(5, TimeUnit.SECONDS)).as("Curator's reader beside ours").isTrue();
        curatorLock.readLock().release();
        assertThat(curatorLock.writeLock().acquire(200, TimeUnit.MILLISECONDS)).as("Curator's writer beside our reader").isFalse();
        assertThat(reader.release()).isTrue();
        LockHandle writer = acquire(key, Duration.ZERO, Duration.ZERO, LockType.FAIR, false);
        assertThat(curatorLock.readLock().acquire(200, TimeUnit.MILLISECONDS)).as("Curator's reader beside our FAIR").isFalse();
        assertThat(writer.release()).isTrue();
    }

    /** Keys that are not node names (slashes, dots, control characters) each get a node of their own. */
    @Test
    void keysThatAreNotNodeNamesAreEncodedIntoOneNodeEach() throws Exception {
        List<String> keys = List.of("orders/42", "orders", "..", "a%2Fb", "tab\there", "emoji \uD83D\uDD12");
        List<LockHandle> held = new java.util.ArrayList<>();
        for (String key : keys) {
            LockHandle handle = acquire(key, Duration.ZERO, Duration.ZERO, LockType.REENTRANT, false);
            assertThat(handle).as("lock of %s", key).isNotNull();
            held.add(handle);
        }
        assertThat(client.getChildren().forPath(BASE)).as("one node per key, side by side")
                .contains("orders%2F42", "orders", "%2E%2E", "a%252Fb", "tab%09here", "emoji %F0%9F%94%92");
        for (LockHandle handle : held) {
            assertThat(handle.release()).isTrue();
        }
    }

    /**
     * A lock node carries its owner and type, which is how another instance names its holder; a plain Curator lock's
     * node carries nothing, and is named by the node itself.
     */
    @Test
    void aLockNodeNamesItsOwnerAndACuratorLocksNodeIsNamedByItself() throws Exception {
        LockOwner owner = LockOwner.next();
        LockHandle writer = provider.acquire(new LockRequest("named", 0, 0, false, LockType.WRITE, owner))
                .get(SLACK.toMillis(), TimeUnit.MILLISECONDS);
        String node = nodes("named").get(0);
        String ownerName = provider.ownerName(owner.id());
        assertThat(new String(client.getData().forPath(provider.lockPath("named") + "/" + node),
                java.nio.charset.StandardCharsets.UTF_8)).isEqualTo(ownerName + "\nWRITE");
        assertThat(provider.holders("named")).singleElement().satisfies(holder -> {
            assertThat(holder.owner()).isEqualTo(ownerName);
            assertThat(holder.instanceId()).isEqualTo(ownerName.substring(0, ownerName.lastIndexOf(':')));
            assertThat(holder.mode()).isEqualTo("write");
        });
        assertThat(writer.release()).isTrue();

        InterProcessReadWriteLock curatorLock = new InterProcessReadWriteLock(client, provider.lockPath("curator's"));
        assertThat(curatorLock.writeLock().acquire(5, TimeUnit.SECONDS)).isTrue();
        try {
            String curatorNode = nodes("curator's").get(0);
            assertThat(provider.holders("curator's")).singleElement().satisfies(holder -> {
                assertThat(holder.owner()).isEqualTo(curatorNode);
                assertThat(holder.instanceId()).isNull();
                assertThat(holder.mode()).isEqualTo("exclusive");
            });
        }
        finally {
            curatorLock.writeLock().release();
        }
    }

    /**
     * A closed key is a node beside the base path with the reason: a waiter fails at once, a newcomer of every type
     * fails even when the key is free, the holder keeps its lock; reopening deletes the node.
     */
    @Test
    void aClosedKeyIsANodeBesideTheBasePathWithItsReason() throws Exception {
        LockHandle holder = acquire("closing", Duration.ZERO, Duration.ZERO, LockType.REENTRANT, false);
        CompletableFuture<LockHandle> waiter = provider.acquire(new LockRequest("closing",
                Duration.ofSeconds(30).toNanos(), 0, false, LockType.READ, LockOwner.next()));
        await().atMost(SLACK).until(() -> nodes("closing").size() == 2);

        assertThat(provider.closeKey("closing", "sold out")).as("waiters told").isEqualTo(1);
        assertThat(new String(client.getData().forPath(BASE + "-closed/closing"), java.nio.charset.StandardCharsets.UTF_8))
                .isEqualTo("sold out");
        assertThat(waiter).failsWithin(SLACK).withThrowableThat().havingCause()
                .isInstanceOf(io.github.distlock.LockKeyClosedException.class)
                .withMessage("Lock 'closing' is closed: sold out");
        await().atMost(SLACK).until(() -> nodes("closing").size() == 1);
        assertThat(holder.stillHeld()).isTrue();
        assertThat(holder.release()).isTrue();
        for (LockType type : LockType.values()) {
            assertThat(provider.acquire(new LockRequest("closing", 0, 0, false, type, LockOwner.next())))
                    .as("a newcomer of type %s on the free, closed key", type).failsWithin(SLACK)
                    .withThrowableThat().havingCause().isInstanceOf(io.github.distlock.LockKeyClosedException.class);
        }
        assertThat(nodes("closing")).as("nodes the newcomers left").isEmpty();

        provider.reopenKey("closing");
        assertThat(client.checkExists().forPath(BASE + "-closed/closing")).isNull();
        LockHandle again = acquire("closing", Duration.ZERO, Duration.ZERO, LockType.FAIR, false);
        assertThat(again).isNotNull();
        assertThat(again.release()).isTrue();
    }

    /**
     * A waiter cut off from the server while the key is closed and its holder releases: when it reconnects, the server
     * replays the holder's deletion (a data watch) before the closed node's creation (an exists watch), so the waiter
     * looks at the queue before it hears of the close, and finds itself first. It must fail with the close, not take
     * the lock: it was queued when the close completed.
     */
    @Test
    void aWaiterThatReconnectsAfterACloseAndTheHoldersReleaseDoesNotTakeTheLock() throws Exception {
        String key = "closed-while-cut-off";
        try (TcpProxy proxy = TcpProxy.start(server.getPort());
                CuratorFramework waiterClient = connectShowingWatches("127.0.0.1:" + proxy.port())) {
            ZooKeeperLockProvider waiterSide = new ZooKeeperLockProvider(waiterClient, BASE);
            try {
                LockHandle holder = acquire(key, Duration.ZERO, Duration.ZERO, LockType.REENTRANT, false);
                CompletableFuture<LockHandle> waiter = waiterSide.acquire(new LockRequest(key,
                        Duration.ofSeconds(30).toNanos(), 0, false, LockType.REENTRANT, LockOwner.next()));
                WatchesShown waiterZooKeeper = (WatchesShown) waiterClient.getZookeeperClient().getZooKeeper();
                String holderNode = ((ZooKeeperLockHandle) holder).path();
                String closedNode = BASE + "-closed/" + key;
                await().atMost(SLACK).until(() -> waiterZooKeeper.dataWatches().contains(holderNode)
                        && waiterZooKeeper.existWatches().contains(closedNode));

                proxy.pause();
                proxy.dropConnections();
                assertThat(provider.closeKey(key, "sold out")).as("the waiter queued on the other instance").isEqualTo(1);
                assertThat(holder.release()).isTrue();
                proxy.resume();

                assertThat(waiter).failsWithin(SLACK).withThrowableThat().havingCause()
                        .isInstanceOf(io.github.distlock.LockKeyClosedException.class)
                        .withMessage("Lock '" + key + "' is closed: sold out");
                await().atMost(SLACK).until(() -> nodes(key).isEmpty());
            }
            finally {
                waiterSide.close();
                provider.reopenKey(key);
            }
        }
    }

    /** A started client whose ZooKeeper handle shows its watches ({@link WatchesShown}). */
    private static CuratorFramework connectShowingWatches(String connectString) throws InterruptedException {
        CuratorFramework watched = CuratorFrameworkFactory.builder().connectString(connectString)
                .sessionTimeoutMs((int) ZooKeeperTesting.SESSION_TIMEOUT.toMillis())
                .connectionTimeoutMs(10_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5, 1_000))
                .zookeeperFactory((connect, sessionTimeout, watcher, canBeReadOnly) ->
                        new WatchesShown(connect, sessionTimeout, watcher, canBeReadOnly))
                .build();
        watched.start();
        if (!watched.blockUntilConnected(20, TimeUnit.SECONDS)) {
            watched.close();
            throw new AssertionError("could not connect to ZooKeeper at " + connectString);
        }
        return watched;
    }

    /**
     * A ZooKeeper handle that shows the watches it has set: the client registers one when the server's answer to the
     * request that set it arrives, so a watch shown here is set on the server.
     */
    private static final class WatchesShown extends ZooKeeper {

        WatchesShown(String connectString, int sessionTimeout, Watcher watcher, boolean canBeReadOnly) throws IOException {
            super(connectString, sessionTimeout, watcher, canBeReadOnly);
        }

        List<String> dataWatches() {
            return getDataWatches();
        }

        List<String> existWatches() {
            return getExistWatches();
        }
    }
}

package io.github.distlock.zookeeper;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.github.distlock.spi.LockHolderInfo;
import io.github.distlock.spi.LockInspector.ForceRelease;
import io.github.distlock.spi.LockInstance;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;
import org.jspecify.annotations.Nullable;

/**
 * The operator's side of the ZooKeeper locks: who holds a key (the lock nodes that hold it by the recipe's rules, and
 * the owner each one's data names), force release (those nodes deleted, each at the version read, in one
 * transaction), the ping, and this instance's announcement: an ephemeral node {@code <base path>-instances/<instance
 * id>} that goes with the session and is created again when a new session begins.
 */
final class ZooKeeperLockInspector {

    /** How often a force release reads and deletes again when a holder changed between the two. */
    private static final int FORCE_RELEASE_ATTEMPTS = 10;

    private final CuratorFramework client;
    /** Where the announcement is written, never a Curator thread. */
    private final Executor background;
    private final String basePath;
    private final String instancesPath;
    private final String instanceId;
    private final ConnectionStateListener reannounce = this::connectionStateChanged;
    private volatile @Nullable LockInstance announced;
    private @Nullable CompletableFuture<Boolean> pendingPing;

    ZooKeeperLockInspector(CuratorFramework client, String basePath, String instanceId, Executor background) {
        this.client = client;
        this.background = background;
        this.basePath = basePath;
        this.instancesPath = basePath + "-instances";
        this.instanceId = instanceId;
    }

    /** One hold: its lock node as read, and what an operator is shown of it. */
    private record Hold(String path, int version, LockHolderInfo info) {
    }

    List<LockHolderInfo> holders(String key) {
        return infos(holds(key));
    }

    ForceRelease forceRelease(String key, @Nullable String expectedOwner) {
        for (int attempt = 0; attempt < FORCE_RELEASE_ATTEMPTS; attempt++) {
            List<Hold> holds = holds(key);
            List<Hold> taken = (expectedOwner == null) ? holds
                    : holds.stream().filter(hold -> hold.info().owner().equals(expectedOwner)).toList();
            if (taken.isEmpty()) {
                return new ForceRelease(false, infos(holds));
            }
            List<CuratorOp> deletes = new ArrayList<>();
            try {
                for (Hold hold : taken) {
                    deletes.add(client.transactionOp().delete().withVersion(hold.version()).forPath(hold.path()));
                }
                // each at the version read: a node written since (a fencing token) is read again, not deleted blind
                client.transaction().forOperations(deletes);
                return new ForceRelease(true, infos(taken));
            }
            catch (KeeperException.NoNodeException | KeeperException.BadVersionException changed) {
                // a holder released or wrote meanwhile: none was deleted; look again
            }
            catch (Exception ex) {
                throw failed("force-release", key, ex);
            }
        }
        throw new IllegalStateException("Could not force-release lock '" + key + "': its holders changed on each of "
                + FORCE_RELEASE_ATTEMPTS + " attempts");
    }

    /** The lock nodes of {@code key} that hold it by the recipe's rules, with their data. */
    private List<Hold> holds(String key) {
        String lockPath = LockPaths.lockPath(basePath, Objects.requireNonNull(key, "key"));
        try {
            List<String> sorted;
            try {
                sorted = LockPaths.sortedLockNodes(client.getChildren().forPath(lockPath));
            }
            catch (KeeperException.NoNodeException free) {
                return List.of();
            }
            List<Hold> holds = new ArrayList<>();
            Map<String, Optional<LockInstance>> instances = new HashMap<>();
            for (String node : holding(sorted)) {
                String path = ZKPaths.makePath(lockPath, node);
                Stat stat = new Stat();
                byte[] data;
                try {
                    data = client.getData().storingStatIn(stat).forPath(path);
                }
                catch (KeeperException.NoNodeException released) {
                    continue;
                }
                LockNodeData ours = LockNodeData.decode(data);
                String owner = (ours != null) ? ours.owner() : node;
                String holderInstance = (ours != null) ? ours.instanceId() : null;
                String mode = (ours != null) ? ours.mode() : LockPaths.isWriteNode(node) ? "exclusive" : "read";
                LockInstance instance = null;
                if (holderInstance != null) {
                    if (!instances.containsKey(holderInstance)) {
                        instances.put(holderInstance, Optional.ofNullable(instance(holderInstance)));
                    }
                    instance = instances.get(holderInstance).orElse(null);
                }
                holds.add(new Hold(path, stat.getVersion(),
                        new LockHolderInfo(key, owner, holderInstance, instance, mode, null)));
            }
            return holds;
        }
        catch (Exception ex) {
            throw failed("read the holders of", key, ex);
        }
    }

    /** The nodes that hold: the first write node when it comes first, else every read node before the first writer. */
    static List<String> holding(List<String> sorted) {
        if (sorted.isEmpty()) {
            return List.of();
        }
        if (LockPaths.isWriteNode(sorted.get(0))) {
            return List.of(sorted.get(0));
        }
        return sorted.stream().takeWhile(node -> !LockPaths.isWriteNode(node)).toList();
    }

    /** How many lock nodes of {@code key} wait (queued, not holding) right now. */
    long waitingNodes(String key) throws Exception {
        try {
            List<String> sorted = LockPaths.sortedLockNodes(client.getChildren().forPath(LockPaths.lockPath(basePath, key)));
            return sorted.size() - holding(sorted).size();
        }
        catch (KeeperException.NoNodeException free) {
            return 0;
        }
    }

    private static List<LockHolderInfo> infos(List<Hold> holds) {
        return holds.stream().map(Hold::info).toList();
    }

    private static RuntimeException failed(String what, String key, Exception ex) {
        if (ex instanceof InterruptedException) {
            Thread.currentThread().interrupt();
        }
        return (ex instanceof RuntimeException runtime) ? runtime
                : new IllegalStateException("Could not " + what + " lock '" + key + "' in ZooKeeper: " + ex, ex);
    }

    /**
     * An {@code exists} on the base path, waited for at most {@code timeout}; {@code false} at once while the client
     * knows it is disconnected. At most one is in flight: while ZooKeeper does not answer, Curator retries it for the
     * whole retry policy, and later pings wait for the same one instead of piling up more.
     */
    boolean ping(Duration timeout) {
        if (!client.getZookeeperClient().isConnected()) {
            return false;
        }
        CompletableFuture<Boolean> ping;
        synchronized (this) {
            ping = pendingPing;
            if (ping == null || ping.isDone()) {
                CompletableFuture<Boolean> sent = new CompletableFuture<>();
                try {
                    client.checkExists().inBackground((c, event) -> {
                        KeeperException.Code code = KeeperException.Code.get(event.getResultCode());
                        sent.complete(code == KeeperException.Code.OK || code == KeeperException.Code.NONODE);
                    }).forPath(basePath);
                }
                catch (Exception ex) {
                    // the client is closed, or cannot send at all
                    return false;
                }
                ping = sent;
                pendingPing = sent;
            }
        }
        try {
            return ping.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return false;
        }
        catch (ExecutionException | TimeoutException ex) {
            return false;
        }
    }

    /** Stores {@code self} now (in the background) and again whenever a new session begins. */
    void announce(LockInstance self) {
        boolean first = (announced == null);
        announced = Objects.requireNonNull(self, "announce: self");
        if (first) {
            client.getConnectionStateListenable().addListener(reannounce);
        }
        writeAnnouncement();
    }

    private void connectionStateChanged(CuratorFramework ignored, ConnectionState state) {
        // RECONNECTED also after a lost session, whose ephemeral node went with it
        if (state == ConnectionState.RECONNECTED || state == ConnectionState.CONNECTED) {
            writeAnnouncement();
        }
    }

    private void writeAnnouncement() {
        // off Curator's threads: the writes below wait for ZooKeeper
        background.execute(this::writeAnnouncementNow);
    }

    /**
     * Creates the announcement in the current session. A node left by an earlier session of this provider (the client
     * moved on before the server expired that session) would vanish when it expires: it is replaced, not written to.
     * The path holds this provider's own random id, so no other instance's node is touched.
     */
    private void writeAnnouncementNow() {
        LockInstance self = announced;
        if (self == null) {
            return;
        }
        String path = ZKPaths.makePath(instancesPath, LockPaths.segment(instanceId));
        byte[] data = (self.pid() + "\n" + self.host() + "\n" + self.application()).getBytes(StandardCharsets.UTF_8);
        try {
            for (int attempt = 0; attempt < 3; attempt++) {
                try {
                    client.create().creatingParentsIfNeeded().withMode(CreateMode.EPHEMERAL).forPath(path, data);
                    return;
                }
                catch (KeeperException.NodeExistsException exists) {
                    Stat stat = client.checkExists().forPath(path);
                    if (stat == null) {
                        continue;
                    }
                    if (stat.getEphemeralOwner() == client.getZookeeperClient().getZooKeeper().getSessionId()) {
                        client.setData().withVersion(stat.getVersion()).forPath(path, data);
                        return;
                    }
                    client.delete().withVersion(stat.getVersion()).forPath(path);
                }
                catch (KeeperException.NoNodeException | KeeperException.BadVersionException changed) {
                    // deleted or written meanwhile: look again
                }
            }
        }
        catch (Exception ex) {
            if (ex instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            ZooKeeperLockProvider.log().debug("Could not announce this instance at " + path
                    + "; again when the connection is back", ex);
        }
    }

    /** The instance announced under {@code id}, or {@code null} when none is (never announced, or its session ended). */
    @Nullable LockInstance instance(String id) throws Exception {
        byte[] data;
        try {
            data = client.getData().forPath(ZKPaths.makePath(instancesPath, LockPaths.segment(id)));
        }
        catch (KeeperException.NoNodeException gone) {
            return null;
        }
        String[] parts = new String(data, StandardCharsets.UTF_8).split("\n", 3);
        if (parts.length < 3) {
            return null;
        }
        try {
            return new LockInstance(parts[2], parts[1], Long.parseLong(parts[0]));
        }
        catch (NumberFormatException notOurs) {
            return null;
        }
    }

    /** Stops announcing and deletes the announcement (in the background; the session's end deletes it anyway). */
    void close() {
        client.getConnectionStateListenable().removeListener(reannounce);
        LockInstance was = announced;
        announced = null;
        if (was != null) {
            try {
                client.delete().quietly().inBackground()
                        .forPath(ZKPaths.makePath(instancesPath, LockPaths.segment(instanceId)));
            }
            catch (Exception ex) {
                ZooKeeperLockProvider.log().debug("Could not delete this instance's announcement", ex);
            }
        }
    }
}

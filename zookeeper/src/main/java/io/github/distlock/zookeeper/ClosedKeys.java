package io.github.distlock.zookeeper;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

import io.github.distlock.LockKeyClosedException;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.BackgroundCallback;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;

/**
 * Closed keys, kept in ZooKeeper so that every instance sees them: a persistent node {@code <base path>-closed/<key's
 * segment>} whose data is the reason. Beside the base path, not under the key's lock node, where it would be sorted in
 * with the lock nodes (by Curator's recipe too) and would keep the container alive.
 *
 * <p>Invariant: no acquisition that was queued when a close completed takes the lock afterwards, and none that starts
 * after it queues. Each acquisition reads the closed node before its lock node is queued (sent right before the
 * create, so it costs no extra round trip: ZooKeeper answers a session's requests in order), and fails with
 * {@link LockKeyClosedException} when it is there, even when the key is free. An acquisition whose listing shows it
 * the lock takes it at once only when no lock node came or went since its own was created (the listing's
 * {@code pzxid} is its node's {@code czxid}): nobody was ahead of it, so it never waited and that first read stands;
 * it was concurrent with any close after that read and is ordered before it, like a holder the close finds, which
 * keeps its lock. Any other one (it may have waited) reads the closed node again after the listing's answer
 * came, and takes the lock only when the node is absent: that read is answered from a state at or after the
 * listing's, so a close that completed before the listing showed it the lock is seen, and fails it. Watch events
 * alone cannot promise this: when a connection is re-established, the server replays the watches that fired
 * meanwhile in its own order (data watches, such as the one on a waiter's blocker, before exists watches, such as
 * the one on the closed node), and Curator's retries can reorder requests too.
 *
 * <p>One that has to wait also sets a watch on the closed node and looks at it in the same request (an {@code exists}
 * with this class's single watcher, which ZooKeeper keeps once per path and session however many waiters share it),
 * so that a close fails the waiters at once rather than when their turn comes; their futures complete when the reason
 * is read.
 *
 * <p>The watch of a key is removed when its last waiter here stops waiting, so that a session does not collect one
 * watch per key it ever waited for.
 */
final class ClosedKeys {

    private final CuratorFramework client;
    private final String closedBase;
    /** Per closed-node path, the acquisitions of this provider waiting under it; guarded by {@code this}. */
    private final Map<String, Set<ZooKeeperAcquisition>> waiters = new HashMap<>();
    private final Watcher watcher = this::closedNodeChanged;

    ClosedKeys(CuratorFramework client, String basePath) {
        this.client = client;
        this.closedBase = basePath + "-closed";
    }

    /** The node that says {@code key} is closed. */
    String closedPath(String key) {
        return ZKPaths.makePath(closedBase, LockPaths.segment(key));
    }

    /** Closes {@code key}: creates its closed node with the reason, or writes the new reason to it. */
    void close(String key, String reason) throws Exception {
        client.create().orSetData().creatingParentsIfNeeded().forPath(closedPath(key),
                reason.getBytes(StandardCharsets.UTF_8));
    }

    /** Reopens {@code key}: deletes its closed node, if any. */
    void reopen(String key) throws Exception {
        client.delete().quietly().forPath(closedPath(key));
    }

    /**
     * Reads the closed node of {@code key} without a watch; the answer is {@code OK} with the reason as data when
     * closed, {@code NONODE} when open.
     */
    void read(String key, BackgroundCallback answer) throws Exception {
        client.getData().inBackground(answer).forPath(closedPath(key));
    }

    /** The reason in a closed node's data. */
    static String reason(byte[] data) {
        return (data == null) ? "" : new String(data, StandardCharsets.UTF_8);
    }

    /**
     * Fails {@code acquisition} at once if its key is closed now or becomes closed while it waits: see the class
     * comment. Called once per acquisition, when it first has to wait.
     */
    synchronized void watch(ZooKeeperAcquisition acquisition) throws Exception {
        String path = closedPath(acquisition.request.key());
        waiters.computeIfAbsent(path, p -> new LinkedHashSet<>()).add(acquisition);
        arm(path);
    }

    /** {@code acquisition} no longer waits; the last waiter of a key takes the key's watch away. */
    synchronized void unwatch(ZooKeeperAcquisition acquisition) {
        String path = closedPath(acquisition.request.key());
        Set<ZooKeeperAcquisition> set = waiters.get(path);
        if (set == null || !set.remove(acquisition) || !set.isEmpty()) {
            return;
        }
        waiters.remove(path);
        try {
            // under the monitor: sent before any later waiter's exists, which ZooKeeper then answers after it
            client.watchers().remove(watcher).ofType(Watcher.WatcherType.Any).quietly()
                    .inBackground((c, event) -> { }).forPath(path);
        }
        catch (Exception ex) {
            ZooKeeperLockProvider.log().debug("Could not remove the watch on " + path, ex);
        }
    }

    /**
     * Sets the watch on {@code path} and looks at it in one request ({@code exists} sets it whether or not the node is
     * there). A closed node fails the key's waiters right in the answer; their futures complete once the reason is
     * read.
     */
    private void arm(String path) throws Exception {
        client.checkExists().usingWatcher(watcher).inBackground((c, event) -> {
            KeeperException.Code code = KeeperException.Code.get(event.getResultCode());
            if (code == KeeperException.Code.OK && event.getStat() != null) {
                failWaiters(path);
            }
            else if (code != KeeperException.Code.OK && code != KeeperException.Code.NONODE) {
                failAll(path, KeeperException.create(code, path));
            }
        }).forPath(path);
    }

    private void closedNodeChanged(WatchedEvent event) {
        String path = event.getPath();
        if (event.getType() == Watcher.Event.EventType.None || path == null) {
            return;
        }
        // the watch fired once: set it again for the waiters still here (a reopen, or a reason written anew)
        synchronized (this) {
            if (!waiters.containsKey(path)) {
                return;
            }
            try {
                arm(path);
            }
            catch (Exception ex) {
                failAll(path, ex);
            }
        }
    }

    /** Fails every waiter of the closed node at {@code path} now, with the reason once it is read. */
    private void failWaiters(String path) {
        CompletableFuture<String> reason = new CompletableFuture<>();
        for (ZooKeeperAcquisition acquisition : waitersOf(path)) {
            acquisition.failWith(reason.thenApply(text -> new LockKeyClosedException(acquisition.request.key(), text)));
        }
        try {
            client.getData().inBackground((c, event) -> {
                KeeperException.Code code = KeeperException.Code.get(event.getResultCode());
                if (code == KeeperException.Code.OK) {
                    reason.complete(reason(event.getData()));
                }
                else if (code == KeeperException.Code.NONODE) {
                    reason.complete("(reopened since)");
                }
                else {
                    reason.completeExceptionally(KeeperException.create(code, path));
                }
            }).forPath(path);
        }
        catch (Exception ex) {
            reason.completeExceptionally(ex);
        }
    }

    /** Fails the waiters of {@code path}: the closed state of their key cannot be followed. */
    private void failAll(String path, Exception failure) {
        for (ZooKeeperAcquisition acquisition : waitersOf(path)) {
            acquisition.fail(failure);
        }
    }

    private synchronized List<ZooKeeperAcquisition> waitersOf(String path) {
        Set<ZooKeeperAcquisition> set = waiters.get(path);
        return (set == null) ? List.of() : List.copyOf(set);
    }
}

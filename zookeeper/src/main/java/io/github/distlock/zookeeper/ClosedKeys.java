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
 * {@link LockKeyClosedException} when it is there, even when the key is free. One that has to wait then sets a watch
 * on the closed node and looks at it in the same request (an {@code exists} with this class's single watcher, which
 * ZooKeeper keeps once per path and session however many waiters share it): a close that lands after the first read
 * is seen by that request or fires that watch. A session's watch events come in zxid order, before the answers to
 * its later requests, and a closed node seen in an answer ends the waiters at once (their futures complete when the
 * reason is read): so a close ordered before the holder's release ends the waiter before the waiter's listing can
 * show it the lock free. An acquisition that finds the key open and free takes the lock: it was concurrent with the
 * close and ordered before it, like a holder the close finds, which keeps its lock.
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
     * there). A closed node fails the key's waiters right in the answer, before any later answer of the session could
     * show one of them the lock free; their futures complete once the reason is read.
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

package io.github.distlock.zookeeper;

import java.util.concurrent.CompletableFuture;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.BackgroundCallback;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.Stat;
import org.jspecify.annotations.Nullable;

/**
 * The ZooKeeper node operations the locks are made of, each as Curator is asked it: create a lock node, list a lock
 * path's children, watch a node, write to one, look for one, delete one. The asynchronous ones answer through
 * Curator's background callback, on its event thread; the {@code throws Exception} of each is Curator's, thrown when
 * the request cannot even be sent.
 */
final class ZooKeeperLockRepository {

    private final CuratorFramework client;

    ZooKeeperLockRepository(CuratorFramework client) {
        this.client = client;
    }

    /**
     * Creates a lock node: ephemeral sequential, so that it goes with the session and ZooKeeper numbers it in the
     * queue; protected, so that a node created just before a connection loss is found again, not left behind; its
     * parents created as containers, which the server removes once they are empty.
     *
     * @param prefix {@link LockPaths#nodePrefix}; ZooKeeper appends the sequence
     * @param data who holds or waits with it ({@link LockNodeData}), for an operator on any instance
     * @param answer told the created node's path ({@code getName()}) or the failure's result code
     */
    void createLockNode(String prefix, byte[] data, BackgroundCallback answer) throws Exception {
        client.create().creatingParentContainersIfNeeded().withProtection().withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                .inBackground(answer)
                .forPath(prefix, data);
    }

    /** Lists the children of {@code lockPath}; the answer carries the listing's {@code Stat} (its {@code pzxid}). */
    void children(String lockPath, BackgroundCallback answer) throws Exception {
        client.getChildren().inBackground(answer).forPath(lockPath);
    }

    /**
     * Reads {@code path} and leaves {@code watcher} on it, which ZooKeeper fires once when the node is deleted or
     * written to. getData, not exists: a watch set by exists() on a node already gone would stay behind on the server;
     * getData answers NONODE and sets none.
     */
    void watch(String path, Watcher watcher, BackgroundCallback answer) throws Exception {
        client.getData().usingWatcher(watcher).inBackground(answer).forPath(path);
    }

    /**
     * Writes {@code data} (the node's own, unchanged) to {@code path} again, synchronously: the returned {@code Stat}'s
     * {@code mzxid} is the write's zxid.
     */
    Stat touch(String path, byte[] data) throws Exception {
        return client.setData().forPath(path, data);
    }

    /** Whether {@code path} exists, synchronously: its {@code Stat}, or {@code null} when it is gone. */
    @Nullable Stat exists(String path) throws Exception {
        return client.checkExists().forPath(path);
    }

    /**
     * Deletes a lock node of ours. Guaranteed: when the connection fails, Curator keeps trying in the background until
     * it succeeds or the session ends. Completes with whether it was there.
     */
    CompletableFuture<Boolean> delete(String path) {
        CompletableFuture<Boolean> deleted = new CompletableFuture<>();
        try {
            client.delete().guaranteed().inBackground((c, event) -> {
                KeeperException.Code code = KeeperException.Code.get(event.getResultCode());
                if (code == KeeperException.Code.OK) {
                    deleted.complete(true);
                }
                else if (code == KeeperException.Code.NONODE) {
                    deleted.complete(false);
                }
                else {
                    deleted.completeExceptionally(KeeperException.create(code, path));
                }
            }).forPath(path);
        }
        catch (Exception ex) {
            deleted.completeExceptionally(ex);
        }
        return deleted;
    }

    /** {@link #delete}, its answer and failure ignored: for a node nobody waits on. */
    void deleteQuietly(String path) {
        delete(path).exceptionally(failure -> null);
    }
}

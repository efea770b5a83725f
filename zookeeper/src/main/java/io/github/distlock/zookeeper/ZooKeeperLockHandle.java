package io.github.distlock.zookeeper;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockRequest;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.Stat;

/**
 * One lock held in ZooKeeper: its lock node, which only this handle deletes (on release, or when its fixed lease
 * runs out).
 *
 * <p>State: HELD until the first of release (RELEASED), the end of a fixed lease (EXPIRED) or a loss (LOST: the
 * connection was suspended or the session lost, or the node was found gone); each leaves HELD once, by compare-and-set,
 * so a loss is reported at most once and never after the release began. The node is deleted in every state but
 * HELD, whichever way it was left: after a loss reported on a suspended connection whose session then survived, the
 * node is still there, and only its deletion frees the lock.
 */
final class ZooKeeperLockHandle implements LockHandle {

    private static final int HELD = 0;
    private static final int RELEASED = 1;
    private static final int EXPIRED = 2;
    private static final int LOST = 3;

    private final ZooKeeperLockProvider provider;
    private final ZooKeeperLockRepository repository;
    private final ZooKeeperSession session;
    private final LockRequest request;
    private final String path;
    /** The node's data, written again unchanged by {@link #newFencingToken}. */
    private final byte[] data;
    private final AtomicInteger state = new AtomicInteger(HELD);
    private final AtomicBoolean releaseCalled = new AtomicBoolean();
    private final AtomicBoolean lossReported = new AtomicBoolean();
    private volatile long fencingToken;
    private volatile ScheduledFuture<?> leaseEnd;
    private volatile String lostReason;
    private volatile Consumer<String> lostCallback;
    private final Watcher nodeWatcher = this::nodeChanged;

    ZooKeeperLockHandle(ZooKeeperLockProvider provider, LockRequest request, String path, byte[] data,
            long fencingToken) {
        this.provider = provider;
        this.repository = provider.repository();
        this.session = provider.session();
        this.request = request;
        this.path = path;
        this.data = data;
        this.fencingToken = fencingToken;
    }

    /** Starts the fixed lease's timer and the watch that tells when the node is deleted behind our back. */
    void start() {
        if (!request.watchdog()) {
            leaseEnd = provider.schedule(this::leaseRanOut, request.leaseNanos());
        }
        watchNode();
    }

    /** The lock node, e.g. {@code /distlock/orders/_c_...-__WRIT__0000000007}. */
    String path() {
        return path;
    }

    private void watchNode() {
        if (state.get() != HELD) {
            return;
        }
        try {
            repository.watch(path, nodeWatcher, (c, event) -> {
                if (event.getResultCode() == KeeperException.Code.NONODE.intValue()) {
                    lost("the lock node " + path + " is gone (deleted by someone else, or its session expired)");
                }
            });
        }
        catch (Exception ex) {
            ZooKeeperLockProvider.log().debug("Could not watch lock node " + path, ex);
        }
    }

    private void nodeChanged(WatchedEvent event) {
        switch (event.getType()) {
            case NodeDeleted -> lost("the lock node " + path + " was deleted behind its holder's back");
            // a token written to the node (newFencingToken) fires the watch: set it again
            case NodeDataChanged -> watchNode();
            default -> {
                // connection events reach every watcher; the connection listener reports those
            }
        }
    }

    private void leaseRanOut() {
        if (state.compareAndSet(HELD, EXPIRED)) {
            session.forget(this);
            repository.deleteQuietly(path);
        }
        else if (state.get() == LOST) {
            // told lost on a suspended connection, but the node may have survived: the lease still ends
            repository.deleteQuietly(path);
        }
    }

    @Override
    public long fencingToken() {
        return fencingToken;
    }

    /** A write to our own node: its zxid is higher than every zxid before it, in the whole ensemble. */
    @Override
    public long newFencingToken() {
        if (request.type() == LockType.READ) {
            throw new UnsupportedOperationException("READ locks take no fencing token: readers do not write");
        }
        if (state.get() != HELD) {
            return -1;
        }
        try {
            Stat stat = repository.touch(path, data);
            if (state.get() != HELD) {
                // the lease ended, or a loss was found, while the write was under way: the token may be the next
                // holder's to use already (its acquisition came after our node went)
                return -1;
            }
            fencingToken = stat.getMzxid();
            return stat.getMzxid();
        }
        catch (KeeperException.NoNodeException gone) {
            lost("the lock node " + path + " is gone (deleted by someone else, or its session expired)");
            return -1;
        }
        catch (Exception ex) {
            throw asRuntime(ex);
        }
    }

    @Override
    public CompletableFuture<Boolean> releaseAsync() {
        if (!releaseCalled.compareAndSet(false, true)) {
            return CompletableFuture.completedFuture(false);
        }
        boolean wasHeld = state.compareAndSet(HELD, RELEASED);
        session.forget(this);
        ScheduledFuture<?> task = leaseEnd;
        if (task != null) {
            task.cancel(false);
        }
        // Deleted whatever the state: only this handle ever deletes this path, and the path names this acquisition
        // alone (the sequence is never reused under a parent), so no other holder's lock can be touched.
        return repository.delete(path).thenApply(deleted -> wasHeld && deleted);
    }

    @Override
    public boolean stillHeld() {
        if (state.get() != HELD) {
            return false;
        }
        try {
            if (repository.exists(path) == null) {
                lost("the lock node " + path + " is gone (deleted by someone else, or its session expired)");
                return false;
            }
            return state.get() == HELD;
        }
        catch (Exception ex) {
            throw asRuntime(ex);
        }
    }

    @Override
    public boolean lostWhileHeld() {
        return state.get() == LOST;
    }

    @Override
    public void whenLost(Consumer<String> callback) {
        lostCallback = callback;
        if (lostReason != null) {
            fireLost();
        }
    }

    /** A loss found while held: reported once, and only if the lock had not been released or run out. */
    void lost(String reason) {
        if (state.compareAndSet(HELD, LOST)) {
            session.forget(this);
            lostReason = "ZooKeeper lock '" + request.key() + "': " + reason;
            if (lostCallback != null) {
                fireLost();
            }
        }
    }

    /** Either the loss or the callback's registration may come second; whichever does fires, once. */
    private void fireLost() {
        Consumer<String> callback = lostCallback;
        String reason = lostReason;
        if (callback != null && reason != null && lossReported.compareAndSet(false, true)) {
            provider.runCallback(() -> callback.accept(reason));
        }
    }

    private static RuntimeException asRuntime(Exception ex) {
        if (ex instanceof RuntimeException runtime) {
            return runtime;
        }
        if (ex instanceof InterruptedException) {
            Thread.currentThread().interrupt();
        }
        return new CompletionException("ZooKeeper failed: " + ex.getMessage(), ex);
    }

    @Override
    public String toString() {
        return "ZooKeeperLockHandle[" + request.key() + " " + request.type() + " " + path + "]";
    }
}

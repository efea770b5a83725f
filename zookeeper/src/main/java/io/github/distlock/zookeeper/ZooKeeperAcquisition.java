package io.github.distlock.zookeeper;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.LockKeyClosedException;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockRequest;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.Stat;
import org.jspecify.annotations.Nullable;

/**
 * One acquisition, from its request to a handle, "not acquired" or a failure: its lock node queued under the key's
 * lock path, then, while a node ahead of it holds the lock, a watch on that node (its blocker) and a new look at the
 * queue each time the watch fires.
 *
 * <p>Invariant: it ends exactly once, by the compare-and-set out of WAITING (to ACQUIRED or ABANDONED); whatever
 * ends it second sees the state and backs off. A node created for an acquisition that was abandoned is deleted by
 * whichever of "node created" and "abandoned" comes second: the creation publishes {@link #ourPath} and then reads
 * the state; the abandoning sets the state and then reads {@link #ourPath} (both volatile, so one of them sees the
 * other). A node whose acquisition ended ACQUIRED belongs to the handle, which deletes it on release. An acquisition
 * that may have waited reads its key's closed node once more before it takes the lock ({@link ClosedKeys} says why).
 */
final class ZooKeeperAcquisition {

    private static final int WAITING = 0;
    private static final int ACQUIRED = 1;
    private static final int ABANDONED = 2;

    private final ZooKeeperLockProvider provider;
    private final ZooKeeperLockRepository repository;
    private final ZooKeeperSession session;
    final LockRequest request;
    final String lockPath;
    final boolean exclusive;
    final CompletableFuture<LockHandle> future = new CompletableFuture<>();
    private final AtomicInteger state = new AtomicInteger(WAITING);
    private volatile @Nullable String ourPath;
    /** The zxid that created our lock node, or -1 when the create's answer did not carry it (a node found again). */
    private volatile long ourCzxid = -1;
    /** The wait is over; the next answer that shows the lock taken ends the acquisition as "not acquired". */
    private volatile boolean deadlinePassed;
    /** ZooKeeper has shown the lock taken by another; until then, the wait ending is no answer yet. */
    private volatile boolean sawItTaken;
    private volatile @Nullable ScheduledFuture<?> deadline;
    /** What our lock node says about us ({@link LockNodeData}). */
    private final byte[] nodeData;
    /**
     * Done once the closed node of the key was read before queueing (see {@link ClosedKeys}): by then the acquisition
     * was failed if the key is closed. Nothing takes the lock or gives up before it is done.
     */
    private final CompletableFuture<Void> closedRead = new CompletableFuture<>();
    /** Whether this acquisition waits under the watch of its key's closed node; set once. */
    private volatile boolean watchingClosed;
    private final Watcher blockerWatcher = this::blockerChanged;

    ZooKeeperAcquisition(ZooKeeperLockProvider provider, LockRequest request, String lockPath) {
        this.provider = provider;
        this.repository = provider.repository();
        this.session = provider.session();
        this.request = request;
        this.lockPath = lockPath;
        this.exclusive = request.type().exclusive();
        this.nodeData = new LockNodeData(provider.ownerName(request.owner().id()), request.type()).encode();
    }

    void start() {
        session.startedWaiting(this);
        future.whenComplete((handle, failure) -> {
            if (future.isCancelled()) {
                abandon();
            }
        });
        // sent first, answered first: by the time the queue is seen, a closed key has failed this acquisition
        guarded(() -> provider.closedKeys().read(request.key(), (c, event) -> guarded(() -> closedNodeRead(event))));
        if (request.waitNanos() == 0) {
            // one try: when the lock is visibly taken, answer without queueing a node and deleting it again
            guarded(() -> repository.children(lockPath, (c, event) -> guarded(() -> precheck(event))));
        }
        else {
            deadline = provider.schedule(this::deadlineReached, request.waitNanos());
            guarded(this::create);
        }
    }

    private void closedNodeRead(CuratorEvent event) {
        KeeperException.Code code = KeeperException.Code.get(event.getResultCode());
        if (code == KeeperException.Code.OK) {
            fail(new LockKeyClosedException(request.key(), ClosedKeys.reason(event.getData())));
        }
        else if (code != KeeperException.Code.NONODE) {
            fail(KeeperException.create(code, event.getPath()));
        }
        closedRead.complete(null);
    }

    /**
     * Runs {@code step} once the closed node was read: at once in the usual order of answers; later when a retry of
     * the read (a connection loss) made it come after the queue's.
     */
    private boolean closedNodeNotReadYet(ThrowingRunnable step) {
        if (closedRead.isDone()) {
            return false;
        }
        closedRead.whenComplete((ignored, failure) -> guarded(step));
        return true;
    }

    private void precheck(CuratorEvent event) throws Exception {
        if (closedNodeNotReadYet(() -> precheck(event)) || state.get() != WAITING) {
            return;
        }
        KeeperException.Code code = KeeperException.Code.get(event.getResultCode());
        if (code == KeeperException.Code.OK
                && LockPaths.wouldWait(LockPaths.sortedLockNodes(event.getChildren()), exclusive)) {
            sawItTaken = true;
            giveUp();
        }
        else if (code == KeeperException.Code.OK || code == KeeperException.Code.NONODE) {
            create();
        }
        else {
            fail(KeeperException.create(code, lockPath));
        }
    }

    private void create() throws Exception {
        if (state.get() != WAITING) {
            return;
        }
        repository.createLockNode(LockPaths.nodePrefix(lockPath, exclusive), nodeData, (c, event) -> guarded(() -> created(event)));
    }

    private void created(CuratorEvent event) throws Exception {
        KeeperException.Code code = KeeperException.Code.get(event.getResultCode());
        if (code != KeeperException.Code.OK) {
            fail(KeeperException.create(code, lockPath));
            return;
        }
        Stat stat = event.getStat();
        ourCzxid = (stat != null) ? stat.getCzxid() : -1;
        ourPath = event.getName();
        if (state.get() != WAITING) {
            repository.deleteQuietly(ourPath);
            return;
        }
        check();
    }

    /** Lists the lock nodes: ours first (or no write node before a reader) means held; else wait for the blocker. */
    private void check() throws Exception {
        if (state.get() != WAITING) {
            return;
        }
        repository.children(lockPath, (c, event) -> guarded(() -> checked(event)));
    }

    private void checked(CuratorEvent event) throws Exception {
        if (closedNodeNotReadYet(() -> checked(event)) || state.get() != WAITING) {
            return;
        }
        KeeperException.Code code = KeeperException.Code.get(event.getResultCode());
        if (code != KeeperException.Code.OK && code != KeeperException.Code.NONODE) {
            fail(KeeperException.create(code, lockPath));
            return;
        }
        String ours = ZKPaths.getNodeFromPath(ourPath);
        List<String> sorted = LockPaths.sortedLockNodes(event.getChildren());
        if (!sorted.contains(ours)) {
            // only our session's end or someone else deletes a node we are still waiting with
            fail(new IllegalStateException("The lock node " + ourPath + " of lock '" + request.key()
                    + "' vanished while waiting (session expired, or deleted by someone else)"));
            return;
        }
        String blocker = LockPaths.blocker(sorted, ours, exclusive);
        if (blocker == null) {
            long pzxid = event.getStat().getPzxid();
            if (pzxid == ourCzxid) {
                // no lock node came or went since ours: none was ahead of it, it never waited, and the closed node
                // was read before it was queued
                acquired(pzxid);
            }
            else {
                acquireIfOpen(pzxid);
            }
            return;
        }
        sawItTaken = true;
        if (deadlinePassed || request.waitNanos() == 0) {
            giveUp();
            return;
        }
        if (!watchingClosed) {
            watchingClosed = true;
            provider.closedKeys().watch(this);
            if (state.get() != WAITING) {
                // ended meanwhile, maybe before it saw the flag: unwatching twice is harmless, never unwatching is not
                provider.closedKeys().unwatch(this);
                return;
            }
        }
        // getData, not exists: a watch set by exists() on a node already gone would stay behind on the server
        repository.watch(ZKPaths.makePath(lockPath, blocker), blockerWatcher, (c, watched) -> guarded(() -> {
            KeeperException.Code result = KeeperException.Code.get(watched.getResultCode());
            if (result == KeeperException.Code.NONODE) {
                check();
            }
            else if (result != KeeperException.Code.OK) {
                fail(KeeperException.create(result, watched.getPath()));
            }
            // else: the watch wakes us when the blocker goes (or changes: a harmless second look)
        }));
    }

    /**
     * Reads the closed node now that the listing showed the lock ours, and takes it only when the node is absent: the
     * read is sent after the listing's answer came, so ZooKeeper answers it from a state at or after the listing's.
     * A close that completed while we were queued behind another is seen here, whatever became of its watch event
     * (see {@link ClosedKeys}).
     */
    private void acquireIfOpen(long pzxid) throws Exception {
        provider.closedKeys().read(request.key(), (c, event) -> guarded(() -> {
            KeeperException.Code code = KeeperException.Code.get(event.getResultCode());
            if (code == KeeperException.Code.NONODE) {
                acquired(pzxid);
            }
            else if (code == KeeperException.Code.OK) {
                fail(new LockKeyClosedException(request.key(), ClosedKeys.reason(event.getData())));
            }
            else {
                fail(KeeperException.create(code, event.getPath()));
            }
        }));
    }

    private void blockerChanged(WatchedEvent event) {
        // connection events (type None) reach every watcher; the watch itself stays set through them
        if (event.getType() != Watcher.Event.EventType.None) {
            guarded(this::check);
        }
    }

    private void deadlineReached() {
        deadlinePassed = true;
        // until ZooKeeper has answered, the caller gets that answer: one try at least, never "not acquired" for a
        // lock nobody was seen holding (a slow or unreachable ZooKeeper is a failure, reported as one)
        if (sawItTaken) {
            giveUp();
        }
    }

    private void acquired(long pzxid) {
        if (!state.compareAndSet(WAITING, ACQUIRED)) {
            return; // abandoned meanwhile, which deletes the node
        }
        endWaiting();
        ZooKeeperLockHandle handle = new ZooKeeperLockHandle(provider, request, ourPath, nodeData,
                request.fenced() ? pzxid : -1);
        session.hold(handle);
        try {
            handle.start();
        }
        catch (RuntimeException closedMeanwhile) {
            handle.releaseAsync();
            provider.runCallback(() -> future.completeExceptionally(closedMeanwhile));
            return;
        }
        if (session.disconnected()) {
            handle.lost("the connection to ZooKeeper was down when the lock was granted");
        }
        provider.runCallback(() -> {
            if (!future.complete(handle)) {
                // the caller cancelled meanwhile
                handle.releaseAsync();
            }
        });
    }

    /** Ends the acquisition as "not acquired", once its node is gone (so that the caller's next try is not behind it). */
    private void giveUp() {
        if (!state.compareAndSet(WAITING, ABANDONED)) {
            return;
        }
        endWaiting();
        String path = ourPath;
        if (path == null) {
            provider.runCallback(() -> future.complete(null));
            return;
        }
        repository.delete(path).whenComplete((ignored, failure) -> provider.runCallback(() -> future.complete(null)));
    }

    /** Ends the acquisition with {@code failure}; whether it was still waiting (and is now told). */
    boolean fail(Throwable failure) {
        return failWith(CompletableFuture.completedFuture(failure));
    }

    /**
     * Ends the acquisition now (it can no longer take the lock, and its node goes), and completes the caller's future
     * with {@code failure} once that is known; whether it was still waiting.
     */
    boolean failWith(CompletableFuture<? extends Throwable> failure) {
        if (!state.compareAndSet(WAITING, ABANDONED)) {
            return false;
        }
        endWaiting();
        String path = ourPath;
        if (path != null) {
            repository.deleteQuietly(path);
        }
        failure.whenComplete((known, unknown) ->
                provider.runCallback(() -> future.completeExceptionally((known != null) ? known : unknown)));
        return true;
    }

    /** Whether this acquisition ended with the lock (else it waits still, or ended without it). */
    boolean acquiredTheLock() {
        return state.get() == ACQUIRED;
    }

    /** The caller cancelled its future. */
    private void abandon() {
        if (state.compareAndSet(WAITING, ABANDONED)) {
            endWaiting();
            String path = ourPath;
            if (path != null) {
                repository.deleteQuietly(path);
            }
        }
    }

    private void endWaiting() {
        session.stoppedWaiting(this);
        if (watchingClosed) {
            provider.closedKeys().unwatch(this);
        }
        ScheduledFuture<?> task = deadline;
        if (task != null) {
            task.cancel(false);
        }
    }

    /** A failure in our own callback code must end the acquisition, not vanish in Curator's log. */
    private void guarded(ThrowingRunnable step) {
        try {
            step.run();
        }
        catch (Throwable failure) {
            fail(failure);
        }
    }

    @FunctionalInterface
    private interface ThrowingRunnable {
        void run() throws Exception;
    }
}

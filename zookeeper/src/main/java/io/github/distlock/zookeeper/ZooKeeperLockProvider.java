package io.github.distlock.zookeeper;

import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.common.PathUtils;
import org.jspecify.annotations.Nullable;

/**
 * Locks in ZooKeeper: the ZooKeeper lock recipe (an ephemeral sequential node per acquisition under the key's node;
 * the lowest holds the lock; each waiter watches the node it waits for), run asynchronously on Apache Curator.
 *
 * <h2>Why not Curator's {@code InterProcessMutex}</h2>
 * Curator's lock objects belong to threads: {@code acquire} blocks the calling thread for the whole wait, and only the
 * thread that acquired may {@code release} (any other gets {@code IllegalMonitorStateException}). Here an acquisition
 * is a {@link io.github.distlock.spi.LockOwner}, completed as a future, and may be released from any thread; waiting
 * must not hold a thread (reactive callers). Driving Curator's blocking recipe from one dedicated thread per held lock
 * would cost a thread per waiter and holder. So the recipe itself is done here with Curator's background operations
 * and watches, keeping what Curator does well: connection and session handling, retries, protected creation (a node
 * created just before a connection loss is found again, not left behind), guaranteed deletes, container parents.
 * The nodes are named and ordered exactly as Curator's {@code InterProcessReadWriteLock} does (see {@link LockPaths}),
 * so a Curator read/write lock on the same path interoperates.
 *
 * <h2>Semantics</h2>
 * <ul>
 * <li>{@code REENTRANT}, {@code FAIR} and {@code WRITE} are one exclusive lock (write nodes); {@code READ} shares with
 * readers, waits for every write node queued before it. All types of one key exclude each other unless both read.
 * Every type is first come, first served: {@code FAIR} costs nothing extra.</li>
 * <li>The lease is the ZooKeeper session. A watchdog lock ({@code leaseNanos == 0}) lives as long as the session:
 * a dead holder's lock is freed when its session expires (the session timeout plays the part of
 * {@code distlock.watchdog-timeout}). A fixed lease is ended by this provider, which deletes the node when the lease
 * runs out; if the holder dies first, the lock goes with its session, whether that is before or after the lease.</li>
 * <li>Loss: when the connection is {@code SUSPENDED} (the session may expire on the server before the client is back,
 * and the lock with it) or {@code LOST} (it expired), and when a lock node is deleted behind its holder's back, the
 * holder is told once through {@link LockHandle#whenLost}. A holder told on {@code SUSPENDED} whose session survived
 * still has its node: its release deletes it, and answers {@code false}.</li>
 * <li>Fencing tokens are ZooKeeper transaction ids (zxids), which grow with every write in the ensemble, across
 * leader elections (the epoch is their high half): a fenced acquisition takes the {@code pzxid} of the children
 * listing that showed it first (a zxid at or after the deletion of every earlier holder's node, so above every
 * token they were issued), {@link LockHandle#newFencingToken()} the {@code mzxid} of a write to its own node.</li>
 * </ul>
 *
 * <p>The client belongs to the caller: {@link #close()} stops this provider's timers and listener, not the client.
 */
public class ZooKeeperLockProvider implements LockProvider, AutoCloseable {

    private static final Log logger = LogFactory.getLog(ZooKeeperLockProvider.class);

    private static final byte[] NO_DATA = new byte[0];

    private final CuratorFramework client;
    private final String basePath;
    /** Wait deadlines and fixed-lease ends. */
    private final ScheduledExecutorService timer;
    /**
     * Completes callers' futures and runs loss callbacks: never on Curator's or ZooKeeper's event thread, where a
     * caller's continuation that blocks on ZooKeeper would stop every watch and callback of the client.
     */
    private final ExecutorService callbacks;
    private final Set<ZooKeeperLockHandle> held = ConcurrentHashMap.newKeySet();
    private final Set<Acquisition> waiting = ConcurrentHashMap.newKeySet();
    private final ConnectionStateListener connectionListener = this::connectionStateChanged;
    /**
     * Whether the connection is down (SUSPENDED, LOST, READ_ONLY) as last reported. A lock granted while it is down is
     * reported lost at once: the listener may have gone through the held locks just before it was added.
     */
    private volatile boolean disconnected;
    private volatile boolean closed;

    /**
     * @param client a started client; its session timeout is how long a dead holder's lock lives on
     * @param basePath the node under which every key has its node, e.g. {@code /distlock}; not {@code /}
     */
    public ZooKeeperLockProvider(CuratorFramework client, String basePath) {
        if (client.getState() != org.apache.curator.framework.imps.CuratorFrameworkState.STARTED) {
            throw new IllegalArgumentException("The ZooKeeper lock backend needs a started CuratorFramework; this one is "
                    + client.getState() + ": call start() on it where it is made (e.g. in its @Bean method)");
        }
        this.client = client;
        this.basePath = checkBasePath(basePath);
        this.timer = Executors.newSingleThreadScheduledExecutor(task -> daemon(task, "distlock-zookeeper-timer"));
        this.callbacks = Executors.newCachedThreadPool(task -> daemon(task, "distlock-zookeeper-callback"));
        client.getConnectionStateListenable().addListener(connectionListener);
    }

    /**
     * Checks a base path: an absolute, valid ZooKeeper path of its own (not the root, not {@code /zookeeper}).
     *
     * @return the path
     * @throws IllegalArgumentException naming {@code distlock.zookeeper.base-path}, where it usually comes from
     */
    public static String checkBasePath(String basePath) {
        try {
            PathUtils.validatePath(basePath);
        }
        catch (IllegalArgumentException | NullPointerException ex) {
            throw new IllegalArgumentException("distlock.zookeeper.base-path must be an absolute ZooKeeper path such as "
                    + "/distlock, was '" + basePath + "': " + ex.getMessage());
        }
        if (basePath.equals("/") || basePath.equals("/zookeeper") || basePath.startsWith("/zookeeper/")) {
            throw new IllegalArgumentException("distlock.zookeeper.base-path must be a node of its own such as /distlock, "
                    + "not '" + basePath + "' (the root or ZooKeeper's own /zookeeper)");
        }
        return basePath;
    }

    private static Thread daemon(Runnable task, String name) {
        Thread thread = new Thread(task, name);
        thread.setDaemon(true);
        return thread;
    }

    /** Every type; all but {@code READ} can be fenced (readers do not write). */
    @Override
    public boolean supports(LockType type, boolean fenced) {
        return !fenced || type != LockType.READ;
    }

    @Override
    public CompletableFuture<@Nullable LockHandle> acquire(LockRequest request) {
        if (!supports(request.type(), request.fenced())) {
            throw new IllegalArgumentException("ZooKeeper locks of type READ cannot be fenced: readers take no token");
        }
        if (closed) {
            throw new IllegalStateException("The ZooKeeper lock provider is closed");
        }
        Acquisition acquisition = new Acquisition(request, LockPaths.lockPath(basePath, request.key()));
        acquisition.start();
        return acquisition.future;
    }

    /** The node whose children are the lock nodes of {@code key}. */
    public String lockPath(String key) {
        return LockPaths.lockPath(basePath, key);
    }

    /** The client the locks live in. */
    public CuratorFramework getClient() {
        return client;
    }

    /**
     * Stops the timers and the connection listener, and fails acquisitions still waiting (their nodes are deleted);
     * locks still held stay until released or their session ends. Their holders are told ({@link LockHandle#whenLost})
     * first: nothing watches their locks any more, and a provider on a client of its own closes that client next,
     * which ends the session and frees them while their holders may still run.
     */
    @Override
    public void close() {
        closed = true;
        reportHeldLost("the ZooKeeper lock provider was closed: the lock is no longer watched, and goes with the "
                + "session when the provider's client is closed");
        client.getConnectionStateListenable().removeListener(connectionListener);
        for (Acquisition acquisition : waiting) {
            acquisition.fail(new IllegalStateException("The ZooKeeper lock provider was closed while waiting for lock '"
                    + acquisition.request.key() + "'"));
        }
        timer.shutdownNow();
        callbacks.shutdown();
    }

    private void connectionStateChanged(CuratorFramework ignored, ConnectionState state) {
        switch (state) {
            case SUSPENDED, READ_ONLY -> {
                disconnected = true;
                reportHeldLost("the connection to ZooKeeper was " + state + ": the session, and every lock with it, "
                        + "may expire on the server before the client is back");
            }
            case LOST -> {
                disconnected = true;
                reportHeldLost("the ZooKeeper session was LOST (expired): its lock nodes are gone");
                for (Acquisition acquisition : waiting) {
                    acquisition.fail(new IllegalStateException("The ZooKeeper session was lost (expired) while waiting "
                            + "for lock '" + acquisition.request.key() + "'; its place in the queue went with it"));
                }
            }
            case CONNECTED, RECONNECTED -> disconnected = false;
        }
    }

    private void reportHeldLost(String reason) {
        for (ZooKeeperLockHandle handle : held) {
            handle.lost(reason);
        }
    }

    private void deleteQuietly(String path) {
        deleteNode(path).exceptionally(failure -> null);
    }

    /**
     * Deletes a lock node of ours. Guaranteed: when the connection fails, Curator keeps trying in the background until
     * it succeeds or the session ends. Completes with whether it was there.
     */
    private CompletableFuture<Boolean> deleteNode(String path) {
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

    private void runCallback(Runnable task) {
        try {
            callbacks.execute(task);
        }
        catch (RuntimeException rejected) {
            // closed: run here rather than leave a caller waiting forever
            task.run();
        }
    }

    private ScheduledFuture<?> schedule(Runnable task, long nanos) {
        try {
            return timer.schedule(task, nanos, TimeUnit.NANOSECONDS);
        }
        catch (RuntimeException rejected) {
            throw new IllegalStateException("The ZooKeeper lock provider is closed", rejected);
        }
    }

    /**
     * One acquisition, from its request to a handle, "not acquired" or a failure.
     *
     * <p>Invariant: it ends exactly once, by the compare-and-set out of WAITING (to ACQUIRED or ABANDONED); whatever
     * ends it second sees the state and backs off. A node created for an acquisition that was abandoned is deleted by
     * whichever of "node created" and "abandoned" comes second: the creation publishes {@link #ourPath} and then reads
     * the state; the abandoning sets the state and then reads {@link #ourPath} (both volatile, so one of them sees the
     * other). A node whose acquisition ended ACQUIRED belongs to the handle, which deletes it on release.
     */
    private final class Acquisition {

        private static final int WAITING = 0;
        private static final int ACQUIRED = 1;
        private static final int ABANDONED = 2;

        final LockRequest request;
        final String lockPath;
        final boolean exclusive;
        final CompletableFuture<LockHandle> future = new CompletableFuture<>();
        private final AtomicInteger state = new AtomicInteger(WAITING);
        private volatile String ourPath;
        /** The wait is over; the next answer that shows the lock taken ends the acquisition as "not acquired". */
        private volatile boolean deadlinePassed;
        /** ZooKeeper has shown the lock taken by another; until then, the wait ending is no answer yet. */
        private volatile boolean sawItTaken;
        private volatile ScheduledFuture<?> deadline;
        private final Watcher blockerWatcher = this::blockerChanged;

        Acquisition(LockRequest request, String lockPath) {
            this.request = request;
            this.lockPath = lockPath;
            this.exclusive = request.type().exclusive();
        }

        void start() {
            waiting.add(this);
            future.whenComplete((handle, failure) -> {
                if (future.isCancelled()) {
                    abandon();
                }
            });
            if (request.waitNanos() == 0) {
                // one try: when the lock is visibly taken, answer without queueing a node and deleting it again
                guarded(() -> client.getChildren().inBackground((c, event) -> guarded(() -> precheck(event)))
                        .forPath(lockPath));
            }
            else {
                deadline = schedule(this::deadlineReached, request.waitNanos());
                guarded(this::create);
            }
        }

        private void precheck(CuratorEvent event) throws Exception {
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
            client.create().creatingParentContainersIfNeeded().withProtection().withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                    .inBackground((c, event) -> guarded(() -> created(event)))
                    .forPath(LockPaths.nodePrefix(lockPath, exclusive), NO_DATA);
        }

        private void created(CuratorEvent event) throws Exception {
            KeeperException.Code code = KeeperException.Code.get(event.getResultCode());
            if (code != KeeperException.Code.OK) {
                fail(KeeperException.create(code, lockPath));
                return;
            }
            ourPath = event.getName();
            if (state.get() != WAITING) {
                deleteQuietly(ourPath);
                return;
            }
            check();
        }

        /** Lists the lock nodes: ours first (or no write node before a reader) means held; else wait for the blocker. */
        private void check() throws Exception {
            if (state.get() != WAITING) {
                return;
            }
            client.getChildren().inBackground((c, event) -> guarded(() -> checked(event))).forPath(lockPath);
        }

        private void checked(CuratorEvent event) throws Exception {
            KeeperException.Code code = KeeperException.Code.get(event.getResultCode());
            if (code != KeeperException.Code.OK && code != KeeperException.Code.NONODE) {
                fail(KeeperException.create(code, lockPath));
                return;
            }
            String ours = ZKPaths.getNodeFromPath(ourPath);
            java.util.List<String> sorted = LockPaths.sortedLockNodes(event.getChildren());
            if (!sorted.contains(ours)) {
                // only our session's end or someone else deletes a node we are still waiting with
                fail(new IllegalStateException("The lock node " + ourPath + " of lock '" + request.key()
                        + "' vanished while waiting (session expired, or deleted by someone else)"));
                return;
            }
            String blocker = LockPaths.blocker(sorted, ours, exclusive);
            if (blocker == null) {
                acquired(event.getStat().getPzxid());
                return;
            }
            sawItTaken = true;
            if (deadlinePassed || request.waitNanos() == 0) {
                giveUp();
                return;
            }
            // getData, not exists: a watch set by exists() on a node already gone would stay behind on the server
            client.getData().usingWatcher(blockerWatcher).inBackground((c, watched) -> guarded(() -> {
                KeeperException.Code result = KeeperException.Code.get(watched.getResultCode());
                if (result == KeeperException.Code.NONODE) {
                    check();
                }
                else if (result != KeeperException.Code.OK) {
                    fail(KeeperException.create(result, watched.getPath()));
                }
                // else: the watch wakes us when the blocker goes (or changes: a harmless second look)
            })).forPath(ZKPaths.makePath(lockPath, blocker));
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
            ZooKeeperLockHandle handle = new ZooKeeperLockHandle(ZooKeeperLockProvider.this, request, ourPath,
                    request.fenced() ? pzxid : -1);
            held.add(handle);
            try {
                handle.start();
            }
            catch (RuntimeException closedMeanwhile) {
                handle.releaseAsync();
                runCallback(() -> future.completeExceptionally(closedMeanwhile));
                return;
            }
            if (disconnected) {
                handle.lost("the connection to ZooKeeper was down when the lock was granted");
            }
            runCallback(() -> {
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
                runCallback(() -> future.complete(null));
                return;
            }
            deleteNode(path).whenComplete((ignored, failure) -> runCallback(() -> future.complete(null)));
        }

        void fail(Throwable failure) {
            if (!state.compareAndSet(WAITING, ABANDONED)) {
                return;
            }
            endWaiting();
            String path = ourPath;
            if (path != null) {
                deleteQuietly(path);
            }
            runCallback(() -> future.completeExceptionally(failure));
        }

        /** The caller cancelled its future. */
        private void abandon() {
            if (state.compareAndSet(WAITING, ABANDONED)) {
                endWaiting();
                String path = ourPath;
                if (path != null) {
                    deleteQuietly(path);
                }
            }
        }

        private void endWaiting() {
            waiting.remove(this);
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
    }

    @FunctionalInterface
    private interface ThrowingRunnable {
        void run() throws Exception;
    }

    // ---------------------------------------------------------------- used by the handle

    CuratorFramework client() {
        return client;
    }

    void forget(ZooKeeperLockHandle handle) {
        held.remove(handle);
    }

    ScheduledFuture<?> scheduleLeaseEnd(Runnable task, long nanos) {
        return schedule(task, nanos);
    }

    CompletableFuture<Boolean> delete(String path) {
        return deleteNode(path);
    }

    void callback(Runnable task) {
        runCallback(task);
    }

    static Log log() {
        return logger;
    }

    /** Locks this provider holds and watches (for tests and diagnostics). */
    int heldCount() {
        return held.size();
    }
}

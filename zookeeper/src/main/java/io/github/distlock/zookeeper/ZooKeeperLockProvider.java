package io.github.distlock.zookeeper;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockKeyClosedException;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockHolderInfo;
import io.github.distlock.spi.LockInspector;
import io.github.distlock.spi.LockInstance;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.imps.CuratorFrameworkState;
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
 * <h2>Operations</h2>
 * <ul>
 * <li>Every lock node carries its owner, {@code <instance id>:<owner id>} ({@link #ownerName}), and its type as
 * data, so that {@link #holders} on any instance names them; the instance id is a random UUID per provider, and
 * {@link #announce} keeps an ephemeral node {@code <base path>-instances/<instance id>} with the instance's identity.
 * A node of a plain Curator lock on the same path is named by its node name, with no instance.</li>
 * <li>{@link #forceRelease(String, String)} deletes the holding nodes (each at the version read, all in one
 * transaction); their holders watch their nodes and are told at once through {@link LockHandle#whenLost}, on this
 * instance or another.</li>
 * <li>{@link #closeKey} keeps the closed state in ZooKeeper, a persistent node {@code <base path>-closed/<key>} with
 * the reason, for every type: see {@link ClosedKeys} for how no waiter stays queued on a closed key.</li>
 * </ul>
 *
 * <h2>Inside</h2>
 * This class keeps the timer and the callback threads, and hands the rest out: {@link ZooKeeperLockRepository} makes
 * the node operations, {@link ZooKeeperAcquisition} queues one acquisition's node and waits for its turn,
 * {@link ZooKeeperLockHandle} is one held lock, and {@link ZooKeeperSession} follows the connection and tells holders
 * and waiters of its loss. What they log, they log under this class's category.
 *
 * <p>The client belongs to the caller: {@link #close()} stops this provider's timers and listener, not the client.
 */
public class ZooKeeperLockProvider implements LockProvider, LockInspector, AutoCloseable {

    private static final Log logger = LogFactory.getLog(ZooKeeperLockProvider.class);

    private final CuratorFramework client;
    /** The node operations the locks are made of. */
    private final ZooKeeperLockRepository repository;
    /** The locks held and waited for, and what the connection's state means for them. */
    private final ZooKeeperSession session;
    private final String basePath;
    /** This provider's part of every owner it writes: see {@link #ownerName}. */
    private final String instanceId = UUID.randomUUID().toString();
    private final ClosedKeys closedKeys;
    private final ZooKeeperLockInspector inspector;
    /** Wait deadlines and fixed-lease ends. */
    private final ScheduledExecutorService timer;
    /**
     * Completes callers' futures and runs loss callbacks: never on Curator's or ZooKeeper's event thread, where a
     * caller's continuation that blocks on ZooKeeper would stop every watch and callback of the client.
     */
    private final ExecutorService callbacks;
    private volatile boolean closed;

    /**
     * @param client a started client; its session timeout is how long a dead holder's lock lives on
     * @param basePath the node under which every key has its node, e.g. {@code /distlock}; not {@code /}
     */
    public ZooKeeperLockProvider(CuratorFramework client, String basePath) {
        if (client.getState() != CuratorFrameworkState.STARTED) {
            throw new IllegalArgumentException("The ZooKeeper lock backend needs a started CuratorFramework; this one is "
                    + client.getState() + ": call start() on it where it is made (e.g. in its @Bean method)");
        }
        this.client = client;
        this.basePath = checkBasePath(basePath);
        this.repository = new ZooKeeperLockRepository(client);
        this.session = new ZooKeeperSession(client);
        this.closedKeys = new ClosedKeys(client, this.basePath);
        this.inspector = new ZooKeeperLockInspector(client, this.basePath, instanceId, this::runCallback);
        this.timer = Executors.newSingleThreadScheduledExecutor(task -> daemon(task, "distlock-zookeeper-timer"));
        this.callbacks = Executors.newCachedThreadPool(task -> daemon(task, "distlock-zookeeper-callback"));
        session.listen();
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
        ZooKeeperAcquisition acquisition = new ZooKeeperAcquisition(this, request,
                LockPaths.lockPath(basePath, request.key()));
        acquisition.start();
        return acquisition.future;
    }

    /** The node whose children are the lock nodes of {@code key}. */
    public String lockPath(String key) {
        return LockPaths.lockPath(basePath, key);
    }

    /**
     * Who holds {@code key} now, on any instance: the lock nodes that hold it by the recipe's rules (a writer first in
     * the queue, else the readers before the first writer), never the waiters; mode {@code exclusive} for
     * {@code REENTRANT} and {@code FAIR}, {@code write}, {@code read}; no remaining lease ({@code null}): a ZooKeeper
     * lock lives as long as its holder's session.
     */
    @Override
    public List<LockHolderInfo> holders(String key) {
        return inspector.holders(key);
    }

    /** Deletes every holding node of {@code key}: see {@link #forceRelease(String, String)}. */
    @Override
    public List<LockHolderInfo> forceRelease(String key) {
        return inspector.forceRelease(key, null).holders();
    }

    /**
     * Deletes the holding nodes of {@code key} ({@code expectedOwner}'s only, when given), each at the version read
     * and all in one transaction: a holder that released or wrote in between makes it read again, so the holders
     * returned are exactly the ones evicted. Their holders are told at once: each watches its own node. Waiters
     * queued behind them take the lock by the recipe's rules.
     */
    @Override
    public ForceRelease forceRelease(String key, @Nullable String expectedOwner) {
        return inspector.forceRelease(key, expectedOwner);
    }

    /** {@code <instance id>:<owner id>}, the instance id being this provider's random UUID. */
    @Override
    public String ownerName(long ownerId) {
        return instanceId + ":" + ownerId;
    }

    /** A round trip to ZooKeeper (an {@code exists} on the base path); {@code false} at once while disconnected. */
    @Override
    public boolean ping(Duration timeout) {
        return inspector.ping(Objects.requireNonNull(timeout, "ping: timeout"));
    }

    /**
     * Keeps an ephemeral node {@code <base path>-instances/<instance id>} with {@code self}: it goes with the session
     * (a dead instance is not named for longer than its locks live) and is written again when a new session begins.
     * Does not block.
     */
    @Override
    public void announce(LockInstance self) {
        inspector.announce(self);
    }

    /**
     * Closes {@code key} for every type: writes {@code <base path>-closed/<key>} with the reason, then fails this
     * instance's waiters at once; the other instances' waiters watch that node and fail when it appears.
     *
     * @return the waiters told here, or the lock nodes queued for the key in ZooKeeper (every instance's) when more
     */
    @Override
    public long closeKey(String key, String reason) {
        Objects.requireNonNull(key, "closeKey: key");
        Objects.requireNonNull(reason, "closeKey: reason");
        String lockPath = lockPath(key);
        // taken before the write: the watch may tell some of them before this thread does, and they count too
        List<ZooKeeperAcquisition> waiters = session.waiting(acquisition -> acquisition.lockPath.equals(lockPath));
        try {
            closedKeys.close(key, reason);
            for (ZooKeeperAcquisition waiter : waiters) {
                waiter.fail(new LockKeyClosedException(key, reason));
            }
            long told = waiters.stream().filter(waiter -> !waiter.acquiredTheLock()).count();
            return Math.max(told, inspector.waitingNodes(key));
        }
        catch (Exception ex) {
            throw operationFailed("close", key, ex);
        }
    }

    /** Deletes the closed node of {@code key}, if any: acquisitions on every instance wait and take it again. */
    @Override
    public void reopenKey(String key) {
        Objects.requireNonNull(key, "reopenKey: key");
        lockPath(key);
        try {
            closedKeys.reopen(key);
        }
        catch (Exception ex) {
            throw operationFailed("reopen", key, ex);
        }
    }

    private static RuntimeException operationFailed(String what, String key, Exception ex) {
        if (ex instanceof InterruptedException) {
            Thread.currentThread().interrupt();
        }
        return (ex instanceof RuntimeException runtime) ? runtime
                : new IllegalStateException("Could not " + what + " lock key '" + key + "' in ZooKeeper: " + ex, ex);
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
        session.reportHeldLost("the ZooKeeper lock provider was closed: the lock is no longer watched, and goes with "
                + "the session when the provider's client is closed");
        session.stopListening();
        inspector.close();
        session.failWaiting(acquisition -> new IllegalStateException("The ZooKeeper lock provider was closed while "
                + "waiting for lock '" + acquisition.request.key() + "'"));
        timer.shutdownNow();
        callbacks.shutdown();
    }

    // ---------------------------------------------------------------- shared with acquisitions and handles

    ZooKeeperLockRepository repository() {
        return repository;
    }

    ZooKeeperSession session() {
        return session;
    }

    ClosedKeys closedKeys() {
        return closedKeys;
    }

    /** Runs {@code task} on the timer after {@code nanos}: a wait's deadline, a fixed lease's end. */
    ScheduledFuture<?> schedule(Runnable task, long nanos) {
        try {
            return timer.schedule(task, nanos, TimeUnit.NANOSECONDS);
        }
        catch (RuntimeException rejected) {
            throw new IllegalStateException("The ZooKeeper lock provider is closed", rejected);
        }
    }

    /** Runs {@code task} on a callback thread: see {@link #callbacks}. */
    void runCallback(Runnable task) {
        try {
            callbacks.execute(task);
        }
        catch (RuntimeException rejected) {
            // closed: run here rather than leave a caller waiting forever
            task.run();
        }
    }

    static Log log() {
        return logger;
    }

    /** Locks this provider holds and watches (for tests and diagnostics). */
    int heldCount() {
        return session.heldCount();
    }
}

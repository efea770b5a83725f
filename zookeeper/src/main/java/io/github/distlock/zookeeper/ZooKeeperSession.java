package io.github.distlock.zookeeper;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Predicate;

import io.github.distlock.spi.LockHandle;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;

/**
 * The client's ZooKeeper session as the provider follows it: the locks held and waited for in it, whether its
 * connection is down, and the telling of both when the connection is suspended or the session lost.
 *
 * <p>Holders are told ({@link LockHandle#whenLost}) on {@code SUSPENDED} and {@code READ_ONLY} already, not only on
 * {@code LOST}: the session may expire on the server before the client is back, and the lock with it. Waiters are
 * failed on {@code LOST} only: their place in the queue survives a suspension whose session survives, and goes with
 * a lost one.
 */
final class ZooKeeperSession {

    private final CuratorFramework client;
    private final Set<ZooKeeperLockHandle> held = ConcurrentHashMap.newKeySet();
    private final Set<ZooKeeperAcquisition> waiting = ConcurrentHashMap.newKeySet();
    private final ConnectionStateListener connectionListener = this::connectionStateChanged;
    /**
     * Whether the connection is down (SUSPENDED, LOST, READ_ONLY) as last reported. A lock granted while it is down is
     * reported lost at once: the listener may have gone through the held locks just before it was added.
     */
    private volatile boolean disconnected;

    ZooKeeperSession(CuratorFramework client) {
        this.client = client;
    }

    /** Starts following the connection's state. */
    void listen() {
        client.getConnectionStateListenable().addListener(connectionListener);
    }

    /** Stops following the connection's state. */
    void stopListening() {
        client.getConnectionStateListenable().removeListener(connectionListener);
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
                failWaiting(acquisition -> new IllegalStateException("The ZooKeeper session was lost (expired) while "
                        + "waiting for lock '" + acquisition.request.key() + "'; its place in the queue went with it"));
            }
            case CONNECTED, RECONNECTED -> disconnected = false;
        }
    }

    /** Whether the connection was down (SUSPENDED, LOST, READ_ONLY) when last reported. */
    boolean disconnected() {
        return disconnected;
    }

    /** Tells every holder its lock is lost, for {@code reason}. */
    void reportHeldLost(String reason) {
        for (ZooKeeperLockHandle handle : held) {
            handle.lost(reason);
        }
    }

    /** The acquisitions waiting now that {@code which} selects. */
    List<ZooKeeperAcquisition> waiting(Predicate<ZooKeeperAcquisition> which) {
        return waiting.stream().filter(which).toList();
    }

    /** Fails every acquisition still waiting, each with its own failure. */
    void failWaiting(Function<ZooKeeperAcquisition, Throwable> failure) {
        for (ZooKeeperAcquisition acquisition : waiting) {
            acquisition.fail(failure.apply(acquisition));
        }
    }

    void startedWaiting(ZooKeeperAcquisition acquisition) {
        waiting.add(acquisition);
    }

    void stoppedWaiting(ZooKeeperAcquisition acquisition) {
        waiting.remove(acquisition);
    }

    void hold(ZooKeeperLockHandle handle) {
        held.add(handle);
    }

    void forget(ZooKeeperLockHandle handle) {
        held.remove(handle);
    }

    /** Locks held and watched. */
    int heldCount() {
        return held.size();
    }
}

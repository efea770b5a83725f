package io.github.distlock.redisson;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.redisson.api.RTopic;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/**
 * Tells the holders of a force-released lock at once, on whichever instance they run. The force release
 * ({@link RedisLockInspector}) publishes, in the same script that evicts, one message per evicted owner on
 * {@value #CHANNEL}: {@code <key length in bytes>|<key><owner>}; every provider subscribes to it once and reports the
 * matching lock it holds lost through its lease-lost path. The instance that force-released also reports its own
 * evicted locks without waiting for the message.
 *
 * <p>A message is only a shortcut: one lost (no subscription yet, a reconnect) leaves the holder to what told it
 * before — the lease check of a watchdog lock, the release of a fixed lease. Plain {@code PUBLISH}, as the hand-off
 * messages: in a cluster it reaches the subscribers of every node, and it names no key of another slot.
 *
 * <p>The owner in a message is unique per acquisition ({@link io.github.distlock.spi.LockOwner}), so a message can
 * only name a hold that was evicted: a lock taken after the eviction has another owner.
 */
final class Evictions {

    private static final Log logger = LogFactory.getLog(RedissonLockProvider.class);

    /** The channel every provider listens on for evictions. */
    static final String CHANNEL = "distlock:evicted";

    /** What a holder is told. */
    static final String REASON = "it was force-released (an operator took the key away)";

    /** How many registrations between two sweeps of fixed leases that ran out without a release. */
    private static final int SWEEP_EVERY = 1024;

    private final RedissonClient redisson;
    private final String clientId;
    private final LeaseMonitor monitor;
    /**
     * The locks this provider holds now, by key and owner: the ones a message may name. Several per owner: a writer's
     * owner may also read the key it writes. The sets are changed only inside the map's atomic calls for their key.
     */
    private final ConcurrentHashMap<Held, Set<RedissonLockHandle>> held = new ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.AtomicInteger registrations = new java.util.concurrent.atomic.AtomicInteger();
    private volatile CompletableFuture<Integer> subscription;
    private volatile boolean closed;

    /** A hold: the key as the caller named it (not the read/write hash's) and the owner id. */
    private record Held(String key, long owner) {
    }

    Evictions(RedissonClient redisson, String clientId, LeaseMonitor monitor) {
        this.redisson = redisson;
        this.clientId = clientId;
        this.monitor = monitor;
    }

    /**
     * Subscribes to {@value #CHANNEL} unless subscribed or on the way; not waited for, and never failing: a provider
     * starts while Redis is down, and a failed subscription is tried again at the next lock held.
     */
    void subscribe() {
        CompletableFuture<Integer> current = subscription;
        if (closed || (current != null && !current.isCompletedExceptionally())) {
            return;
        }
        synchronized (this) {
            if (closed || (subscription != null && !subscription.isCompletedExceptionally())) {
                return;
            }
            try {
                CompletableFuture<Integer> subscribing = topic()
                        .addListenerAsync(String.class, (channel, message) -> onMessage(message)).toCompletableFuture();
                subscribing.whenComplete((id, failure) -> {
                    if (failure != null) {
                        logger.debug("Could not subscribe to " + CHANNEL + "; force-released holders learn it from "
                                + "their lease check or release", failure);
                    }
                });
                subscription = subscribing;
            }
            catch (RuntimeException shutDown) {
                subscription = CompletableFuture.failedFuture(shutDown);
            }
        }
    }

    private RTopic topic() {
        return redisson.getTopic(CHANNEL, StringCodec.INSTANCE);
    }

    /** {@code handle} is held from now on, under {@code key}: a message naming it reports it lost. */
    void held(String key, RedissonLockHandle handle) {
        held.compute(new Held(key, handle.owner()), (ignored, handles) -> {
            Set<RedissonLockHandle> all = (handles != null) ? handles : new HashSet<>(2);
            all.add(handle);
            return all;
        });
        subscribe();
        if (registrations.incrementAndGet() % SWEEP_EVERY == 0) {
            // a caller of the SPI that never releases a fixed lease would otherwise be remembered forever
            long now = System.nanoTime();
            for (Held each : held.keySet()) {
                held.computeIfPresent(each, (ignored, handles) -> {
                    handles.removeIf(stale -> stale.monitor == null
                            && now - stale.heldSince > TimeUnit.MILLISECONDS.toNanos(stale.leaseMillis()));
                    return handles.isEmpty() ? null : handles;
                });
            }
        }
    }

    /** {@code handle} is released or reported lost: no message concerns it any more. */
    void forget(String key, RedissonLockHandle handle) {
        held.computeIfPresent(new Held(key, handle.owner()), (ignored, handles) -> {
            handles.remove(handle);
            return handles.isEmpty() ? null : handles;
        });
    }

    /** Reports the locks of {@code owner} on {@code key} lost, if this provider holds any; once, whoever comes first. */
    void evicted(String key, long owner) {
        Set<RedissonLockHandle> handles = held.remove(new Held(key, owner));
        if (handles != null) {
            for (RedissonLockHandle handle : handles) {
                monitor.reportLost(handle, REASON);
            }
        }
    }

    /** Reports this provider's own holds among {@code ownerName}s evicted from {@code key}. */
    void evictedHere(String key, Iterable<String> ownerNames) {
        for (String ownerName : ownerNames) {
            Long owner = ownOwner(ownerName);
            if (owner != null) {
                evicted(key, owner);
            }
        }
    }

    /** The owner id of {@code ownerName} when this client wrote it, else {@code null}. */
    private Long ownOwner(String ownerName) {
        int colon = ownerName.lastIndexOf(':');
        if (colon != clientId.length() || !ownerName.startsWith(clientId)) {
            return null;
        }
        try {
            return Long.parseLong(ownerName.substring(colon + 1));
        }
        catch (NumberFormatException ex) {
            return null;
        }
    }

    private void onMessage(String message) {
        try {
            // the key's length Lua wrote is in bytes
            byte[] bytes = message.getBytes(StandardCharsets.UTF_8);
            int bar = message.indexOf('|');
            int length = Integer.parseInt(message.substring(0, bar));
            String key = new String(bytes, bar + 1, length, StandardCharsets.UTF_8);
            String ownerName = new String(bytes, bar + 1 + length, bytes.length - bar - 1 - length, StandardCharsets.UTF_8);
            Long owner = ownOwner(ownerName);
            if (owner != null) {
                evicted(key, owner);
            }
        }
        catch (RuntimeException ex) {
            logger.warn("Ignored a malformed eviction message '" + message + "'", ex);
        }
    }

    /** Stops listening (best effort): the client is shared and outlives this provider. */
    void close() {
        CompletableFuture<Integer> current;
        synchronized (this) {
            closed = true;
            current = subscription;
        }
        held.clear();
        if (current != null) {
            current.thenAccept(id -> {
                try {
                    topic().removeListenerAsync(id);
                }
                catch (RuntimeException shutDown) {
                    // the client is shut down: nothing to remove
                }
            });
        }
    }
}

package io.github.distlock.redisson;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
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
 * before — the lease check of a watchdog lock, the release of a fixed lease. A message read before the hold is
 * registered (it comes on the pub/sub connection, and can overtake the acquire's reply on the command connection) is
 * remembered for the watchdog timeout, and reports the hold lost as it registers. Plain {@code PUBLISH}, as the hand-off
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
     * owner may also read the key it writes. The sets are never changed: the map's atomic calls for their key replace
     * them.
     */
    private final ConcurrentHashMap<Held, Set<RedissonLockHandle>> held = new ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.AtomicInteger registrations = new java.util.concurrent.atomic.AtomicInteger();
    /**
     * Evictions of this client's holds read lately, by hold: unmatched ones (no hold registered yet: the message
     * overtook the acquire's reply) report the hold lost when it registers; matched ones (already told, say by
     * {@link #evictedHere}) keep the second notice of the same eviction from telling a later hold of that owner
     * (a writer's read). Written only inside the atomic calls of {@code held} for their hold; forgotten after
     * {@link #rememberNanos}.
     */
    private final ConcurrentHashMap<Held, Notice> notices = new ConcurrentHashMap<>();
    private final long rememberNanos;
    private volatile CompletableFuture<Integer> subscription;
    private volatile boolean closed;

    /** A hold: the key as the caller named it (not the read/write hash's) and the owner id. */
    private record Held(String key, long owner) {
    }

    /** An eviction read at {@code readAt} ({@link System#nanoTime()}); {@code told} once a hold was reported lost. */
    private record Notice(long readAt, boolean told) {
    }

    /**
     * @param rememberMillis how long an eviction that named no registered hold is remembered: longer than an acquire's
     * reply can trail the eviction message (the watchdog timeout)
     */
    Evictions(RedissonClient redisson, String clientId, LeaseMonitor monitor, long rememberMillis) {
        this.redisson = redisson;
        this.clientId = clientId;
        this.monitor = monitor;
        this.rememberNanos = TimeUnit.MILLISECONDS.toNanos(rememberMillis);
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

    /**
     * {@code handle} is held from now on, under {@code key}: a message naming it reports it lost — also one read
     * before this call, which reports it lost now.
     */
    void held(String key, RedissonLockHandle handle) {
        Held hold = new Held(key, handle.owner());
        boolean[] evictedAlready = new boolean[1];
        held.compute(hold, (ignored, handles) -> {
            Notice notice = notices.get(hold);
            if (notice != null && !notice.told() && System.nanoTime() - notice.readAt() < rememberNanos) {
                notices.put(hold, new Notice(notice.readAt(), true));
                evictedAlready[0] = true;
                return handles;
            }
            return with(handles, handle);
        });
        if (evictedAlready[0]) {
            monitor.reportLost(handle, REASON);
            return;
        }
        subscribe();
        if (registrations.incrementAndGet() % SWEEP_EVERY == 0) {
            // a caller of the SPI that never releases a fixed lease would otherwise be remembered forever
            long now = System.nanoTime();
            for (Held each : held.keySet()) {
                held.computeIfPresent(each, (ignored, handles) -> {
                    Set<RedissonLockHandle> kept = handles;
                    for (RedissonLockHandle stale : handles) {
                        if (kept != null && stale.monitor == null
                                && now - stale.heldSince > TimeUnit.MILLISECONDS.toNanos(stale.leaseMillis())) {
                            kept = without(kept, stale);
                        }
                    }
                    return kept;
                });
            }
        }
    }

    /** {@code handle} is released or reported lost: no message concerns it any more. */
    void forget(String key, RedissonLockHandle handle) {
        held.computeIfPresent(new Held(key, handle.owner()), (ignored, handles) -> without(handles, handle));
    }

    /**
     * {@code handles} (may be {@code null}) and {@code handle}: a new set, never changed afterwards. Almost every hold is
     * the only one of its owner on its key, so the usual set is a one-element {@code Set.of}: one small object made on
     * the thread that hands the lock out, where a {@code HashSet} made four.
     */
    private static Set<RedissonLockHandle> with(Set<RedissonLockHandle> handles, RedissonLockHandle handle) {
        if (handles == null) {
            return Set.of(handle);
        }
        if (handles.contains(handle)) {
            return handles;
        }
        Set<RedissonLockHandle> all = new HashSet<>(handles);
        all.add(handle);
        return Set.copyOf(all);
    }

    /** {@code handles} without {@code handle}, as a new set; {@code null} (no entry) when none is left. */
    private static Set<RedissonLockHandle> without(Set<RedissonLockHandle> handles, RedissonLockHandle handle) {
        if (!handles.contains(handle)) {
            return handles;
        }
        if (handles.size() == 1) {
            return null;
        }
        Set<RedissonLockHandle> rest = new HashSet<>(handles);
        rest.remove(handle);
        return Set.copyOf(rest);
    }

    /** Reports the locks of {@code owner} on {@code key} lost, if this provider holds any; once, whoever comes first. */
    void evicted(String key, long owner) {
        Held hold = new Held(key, owner);
        long now = System.nanoTime();
        List<RedissonLockHandle> lost = new ArrayList<>(2);
        held.compute(hold, (ignored, handles) -> {
            Notice notice = notices.get(hold);
            if (notice != null && now - notice.readAt() < rememberNanos) {
                // the second notice of one eviction (the force-releasing instance tells its holders before the
                // message comes): a hold of this owner registered since came after the eviction
                return handles;
            }
            notices.put(hold, new Notice(now, handles != null));
            if (handles != null) {
                lost.addAll(handles);
            }
            return null;
        });
        for (RedissonLockHandle handle : lost) {
            monitor.reportLost(handle, REASON);
        }
        // evictions are rare (an operator's force release): look over the few remembered ones now
        notices.forEach((each, notice) -> {
            if (now - notice.readAt() >= rememberNanos) {
                notices.remove(each, notice);
            }
        });
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

    /** One message of {@value #CHANNEL}, as the subscription reads it (package-private for tests). */
    void onMessage(String message) {
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
        notices.clear();
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

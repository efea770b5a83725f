package io.github.distlock.redisson;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;

import io.github.distlock.spi.LockDurations;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.redisson.api.RScript;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/**
 * The fair Redis lock: a FIFO queue beside the lock, and a release that hands the lock straight to the head waiter.
 *
 * <p>Keys of lock {@code K} (one hash slot: the companions carry {@code K}'s hash tag, as Redisson's do):
 * <ul>
 * <li>{@code K}: the lock, a hash {@code {<client id>:<owner>: 1}} with a time to live — the very hash Redisson's
 * {@code RLock} writes, so inspection, fencing and the actuator read it alike;</li>
 * <li>{@code distlock_queue:{K}}: a list of owner fields in arrival order (pushed in O(1), popped in O(1));</li>
 * <li>{@code distlock_waiters:{K}}: a hash owner field → {@code <expiry ms>:<lease ms>}. An entry is what makes a
 * list element a waiter: a waiter that leaves takes out both (the element from the tail's end, where a short wait's
 * is), and a list element left without an entry (its entry expired, or was taken by a close) is skipped when it
 * reaches the head. Waiters refresh their entry every third of {@link #entryTtlMillis}; an entry not refreshed (its
 * process died) is skipped once expired;</li>
 * <li>{@code distlock_closed:{K}}: present while the key is closed; its value is the reason.</li>
 * <li>{@code distlock_closes:{K}}: the key's close count (see {@link HandoffScripts#CLOSE}), which orders a close against a waiter's
 * queueing by Redis's own sequence of scripts.</li>
 * <li>{@code distlock_gone:{K}:<owner field>}: the tombstone of a waiter whose caller is done while a script of it may
 * still be on its way (see {@link HandoffScripts#BURY}); its acquisition scripts do nothing while it lives.</li>
 * </ul>
 *
 * <p>The release deletes the lock and, if a live waiter is queued, makes it the owner (the lock's hash names it) with
 * a grant lease of at most {@link #grantMillis}, and publishes the grant on the channel of that waiter's client —
 * one channel per client ({@code distlock:handoff:<client id>}), subscribed once. A hand-off is the releaser's round
 * trip plus one message, and nobody races for the lock. The grantee extends the grant to its own lease with one
 * more command that it does not wait for (see {@link HandoffWaiter#granted}); a grantee that is gone leaves the lock to
 * expire within the grant lease, not a whole lease.
 *
 * <p>Invariants: (1) a waiter's entry exists iff its element is in the queue or it was granted and has not yet
 * claimed; (2) the lock is free and a live entry queued only between a grant that expired unclaimed and the next
 * script that looks at the key: every acquisition script first hands a free lock to a live head other than the caller,
 * so the queue never stalls behind a lost message or a dead grantee; (3) a waiter completes once (its
 * {@link HandoffWaiter#done} flag): grant message, poll and give-up race for it; (4) a script of a waiter that Redis carries
 * out after the waiter completed (a poll sent before the grant message arrived can run after the caller released the
 * lock, on another pooled connection) is undone once the caller is done with the lock: see {@link HandoffWaiter#lateScript};
 * (5) a release that leaves the key free sends Redisson's unlock message on the key's lock channel: the hash is shared
 * with {@code RLock} (REENTRANT) callers of the key, who otherwise sleep beside a free lock until its time to live or
 * their wait runs out (see {@link HandoffScripts#RELEASE_BODY}).
 */
final class HandoffLocks {

    private static final Log logger = LogFactory.getLog(HandoffLocks.class);

    /**
     * How long a waiter's queue entry lives without being refreshed (the longest a dead waiter stays in line), and the
     * longest lease a hand-off grants before the grantee claims its own (how long a grantee that died while queued keeps
     * the key from the next waiter): a third of the watchdog timeout, at most 5 s and at least 100 ms.
     */
    final long entryTtlMillis;
    final long grantMillis;

    static final String CHANNEL_PREFIX = "distlock:handoff:";

    /** After the key in a close message: {@code <close number>|<owner>,<owner>...|}, then the reason. */
    private static final java.util.regex.Pattern CLOSED_WAITERS = java.util.regex.Pattern.compile("(\\d+)\\|(-?\\d+(?:,-?\\d+)*)\\|");

    private final RedissonClient redisson;
    /** Sends the scripts: synced on a replicated Redis, once where a copy must not be re-sent. */
    private final HandoffScriptRunner runner;
    private final String clientId;
    /** Polls, shared with the provider's give-backs. */
    final ScheduledExecutorService timer;
    final GiveBacks giveBacks;
    private final UnlockMessages unlockMessages;
    final ConcurrentHashMap<Long, HandoffWaiter> waiting = new ConcurrentHashMap<>();
    private volatile CompletableFuture<Void> subscription;
    private volatile String publishCommand;

    HandoffLocks(GiveBacks giveBacks, UnlockMessages unlockMessages, RedissonClient redisson, String clientId,
            long watchdogMillis, ScheduledExecutorService timer) {
        this.entryTtlMillis = Math.max(100, Math.min(5_000, watchdogMillis / 3));
        this.runner = new HandoffScriptRunner(redisson);
        this.grantMillis = entryTtlMillis;
        this.giveBacks = giveBacks;
        this.unlockMessages = unlockMessages;
        this.redisson = redisson;
        this.clientId = clientId;
        this.timer = timer;
    }

    /** Runs {@code script}: see {@link HandoffScriptRunner#eval}. */
    <T> CompletableFuture<T> eval(String key, String script, RScript.ReturnType type, List<Object> keys,
            Object... args) {
        return runner.eval(key, script, type, keys, args);
    }

    /** Whether grants must be confirmed by a synced script before they are handed out. */
    boolean synced() {
        return runner.synced();
    }

    static String queueKey(String key) {
        return LockKeys.companion("distlock_queue", key);
    }

    static String entriesKey(String key) {
        return LockKeys.companion("distlock_waiters", key);
    }

    static String closedKey(String key) {
        return LockKeys.companion("distlock_closed", key);
    }

    static String closesKey(String key) {
        return LockKeys.companion("distlock_closes", key);
    }

    private static List<Object> keys(String key) {
        return List.of(key, queueKey(key), entriesKey(key), closedKey(key), closesKey(key));
    }

    static String tombstoneKey(String key, String field) {
        return LockKeys.companion("distlock_gone", key) + ":" + field;
    }

    /** The keys of the scripts of one owner: {@link #keys} and its tombstone. */
    static List<Object> keys(String key, String field) {
        return List.of(key, queueKey(key), entriesKey(key), closedKey(key), closesKey(key), tombstoneKey(key, field));
    }

    /**
     * Subscribes this client's channel once. A grant published before the subscription is in place is not lost: the
     * waiter's next poll claims it.
     */
    private CompletableFuture<Void> subscribed() {
        CompletableFuture<Void> current = subscription;
        if (current != null && !current.isCompletedExceptionally()) {
            return current;
        }
        synchronized (this) {
            if (subscription == null || subscription.isCompletedExceptionally()) {
                subscription = redisson.getTopic(CHANNEL_PREFIX + clientId, StringCodec.INSTANCE)
                        .addListenerAsync(String.class, (channel, message) -> onMessage(message))
                        .toCompletableFuture().thenApply(id -> (Void) null);
            }
            return subscription;
        }
    }

    /**
     * Starts an acquisition. {@code leaseMillis} is the lease the holder keeps (the watchdog timeout for a watchdog
     * lock). The waiter's {@code result} is completed with what was acquired ({@link Granted}), or {@code null} when
     * not acquired within the wait; a caller handed the lock calls {@link HandoffWaiter#letGo()} before it releases it (or
     * when it does not use it after all).
     */
    HandoffWaiter acquire(String key, long owner, String field, long waitNanos, long leaseMillis) {
        HandoffWaiter waiter = new HandoffWaiter(this, key, owner, field, leaseMillis,
                LockDurations.deadline(System.nanoTime(), waitNanos), waitNanos > 0);
        waiting.put(owner, waiter);
        // a caller that stops waiting takes its entry out of the queue (or passes on a grant it will not use)
        waiter.result.whenComplete((granted, failure) -> {
            if (waiter.result.isCancelled()) {
                waiter.abandon();
            }
            else if (waiter.unsettled && waiter.gaveUp()) {
                // a script whose answer was lost while waiting may run yet (see Waiter#lateScript)
                waiter.leaveQuietly();
            }
        });
        CompletableFuture<Void> subscribed = subscribed();
        if (subscribed.isDone()) {
            waiter.attempt(waiter.waits);
        }
        else {
            subscribed.whenComplete((ignored, failure) -> {
                if (failure != null) {
                    logger.warn("Could not subscribe to the fair lock channel; waiters fall back to polling", failure);
                }
                waiter.attempt(waiter.waits);
            });
        }
        return waiter;
    }

    /** Releases {@code field}'s lock and hands it on; or, when not held, takes {@code field} out of the queue. */
    CompletableFuture<Boolean> release(String key, String field) {
        return this.<Long>eval(key, HandoffScripts.RELEASE, RScript.ReturnType.LONG, keys(key), field, String.valueOf(grantMillis),
                CHANNEL_PREFIX, key, lockChannel(key), publishCommand()).thenApply(released -> released == 1L);
    }

    /** {@link #release}, and {@code field}'s tombstone: see {@link HandoffScripts#BURY}. */
    CompletableFuture<Boolean> bury(String key, String field) {
        return this.<Long>eval(key, HandoffScripts.BURY, RScript.ReturnType.LONG, keys(key, field), field, String.valueOf(grantMillis),
                CHANNEL_PREFIX, key, lockChannel(key), publishCommand(), String.valueOf(HandoffScripts.TOMBSTONE_MILLIS))
                .thenApply(released -> released == 1L);
    }

    /** The channel Redisson's {@code RLock} waiters of {@code key} listen on for its unlock message. */
    static String lockChannel(String key) {
        return LockKeys.companion("redisson_lock__channel", key);
    }

    /** Redisson's publish command ({@code spublish} with sharded pub/sub), read once. */
    private String publishCommand() {
        String command = publishCommand;
        if (command == null) {
            command = unlockMessages.publishCommand();
            publishCommand = command;
        }
        return command;
    }

    /** Extends {@code field}'s lock to {@code leaseMillis} if it still holds it. */
    CompletableFuture<Boolean> renew(String key, String field, long leaseMillis) {
        return this.<Long>eval(key, HandoffScripts.RENEW, RScript.ReturnType.LONG, List.<Object>of(key), field,
                String.valueOf(leaseMillis)).thenApply(held -> held == 1L);
    }

    /** After an operator deleted the lock: the next waiter gets it now rather than at its next poll. */
    CompletableFuture<Void> handOffIfFree(String key) {
        return this.<Long>eval(key, HandoffScripts.HAND_OFF_IF_FREE, RScript.ReturnType.LONG, keys(key), String.valueOf(grantMillis),
                CHANNEL_PREFIX, key).thenApply(ignored -> null);
    }

    /** Closes {@code key}; returns how many queued waiters were told. */
    long close(String key, String reason) {
        return Futures.join(this.<Long>eval(key, HandoffScripts.CLOSE, RScript.ReturnType.LONG, keys(key), reason,
                CHANNEL_PREFIX, key, String.valueOf(2 * entryTtlMillis)));
    }

    void reopen(String key) {
        Futures.join(redisson.getBucket(closedKey(key), StringCodec.INSTANCE).deleteAsync()
                .toCompletableFuture());
    }

    /**
     * The provider is closing: its timer stops, so polls and last tries would never run. Every waiter is answered now
     * (and leaves the queue), rather than never.
     */
    void shutdown() {
        for (HandoffWaiter waiter : waiting.values()) {
            waiter.fail(new IllegalStateException("The lock provider was closed while waiting for '" + waiter.key + "'"));
        }
    }

    /** Waiters of this client queued right now (for tests). */
    int waiting() {
        return waiting.size();
    }

    private void onMessage(String message) {
        try {
            if (message.startsWith("g|")) {
                int a = message.indexOf('|', 2);
                int b = message.indexOf('|', a + 1);
                int c = message.indexOf('|', b + 1);
                long owner = Long.parseLong(message.substring(2, a));
                long ttl = Long.parseLong(message.substring(a + 1, b));
                long grantedAt = Long.parseLong(message.substring(b + 1, c));
                String key = message.substring(c + 1);
                HandoffWaiter waiter = waiting.get(owner);
                if (waiter != null && waiter.key.equals(key)) {
                    waiter.granted(ttl, grantedAt);
                }
                // no waiter: it gave up meanwhile, and its give-up script (release or leave) passes the grant on
            }
            else if (message.startsWith("c|")) {
                // the key's length Lua wrote is in bytes
                byte[] bytes = message.getBytes(java.nio.charset.StandardCharsets.UTF_8);
                int a = message.indexOf('|', 2);
                int length = Integer.parseInt(message.substring(2, a));
                String key = new String(bytes, a + 1, length, java.nio.charset.StandardCharsets.UTF_8);
                String rest = new String(bytes, a + 1 + length, bytes.length - a - 1 - length,
                        java.nio.charset.StandardCharsets.UTF_8);
                java.util.Set<Long> removed = new java.util.HashSet<>();
                long number = 0;
                String reason = rest;
                java.util.regex.Matcher listed = CLOSED_WAITERS.matcher(rest);
                if (listed.lookingAt()) {
                    number = Long.parseLong(listed.group(1));
                    for (String owner : listed.group(2).split(",")) {
                        if (!owner.isEmpty()) {
                            removed.add(Long.parseLong(owner));
                        }
                    }
                    reason = rest.substring(listed.end());
                }
                for (HandoffWaiter waiter : waiting.values()) {
                    // only the waiters the close took out: one that was not in the queue then (its first script on
                    // its way, or started after a reopen) hears of a close from its own next script, if the key is
                    // still closed. A close by an older version names nobody: all its waiters, and each leaves
                    if (waiter.key.equals(key) && (number == 0 || removed.contains(waiter.owner))) {
                        waiter.closed(reason, number);
                    }
                }
            }
        }
        catch (RuntimeException ex) {
            logger.warn("Ignored a malformed fair lock message '" + message + "'", ex);
        }
    }

    /** What an acquisition got: the lease Redis holds the lock for until the grantee claims its own. */
    /**
     * @param claimBy {@code 0} when Redis holds the lock for the holder's whole lease; otherwise the {@link System#nanoTime()}
     * by which the grant's shorter lease runs out (a low estimate): the holder's claim must have landed by then
     */
    record Granted(long claimBy) {

        static final Granted FULL = new Granted(0);

        boolean claimNeeded() {
            return claimBy != 0;
        }
    }

}

package io.github.distlock.redisson;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.github.distlock.LockKeyClosedException;
import io.github.distlock.spi.LockDurations;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.redisson.RedissonObject;
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
 * <li>{@code distlock_closes:{K}}: the key's close count (see {@link #CLOSE}), which orders a close against a waiter's
 * queueing by Redis's own sequence of scripts.</li>
 * <li>{@code distlock_gone:{K}:<owner field>}: the tombstone of a waiter whose caller is done while a script of it may
 * still be on its way (see {@link #BURY}); its acquisition scripts do nothing while it lives.</li>
 * </ul>
 *
 * <p>The release deletes the lock and, if a live waiter is queued, makes it the owner (the lock's hash names it) with
 * a grant lease of at most {@link #grantMillis}, and publishes the grant on the channel of that waiter's client —
 * one channel per client ({@code distlock:handoff:<client id>}), subscribed once. A hand-off is the releaser's round
 * trip plus one message, and nobody races for the lock. The grantee extends the grant to its own lease with one
 * more command that it does not wait for (see {@link Waiter#granted}); a grantee that is gone leaves the lock to
 * expire within the grant lease, not a whole lease.
 *
 * <p>Invariants: (1) a waiter's entry exists iff its element is in the queue or it was granted and has not yet
 * claimed; (2) the lock is free and a live entry queued only between a grant that expired unclaimed and the next
 * script that looks at the key: every acquisition script first hands a free lock to a live head other than the caller,
 * so the queue never stalls behind a lost message or a dead grantee; (3) a waiter completes once (its
 * {@link Waiter#done} flag): grant message, poll and give-up race for it; (4) a script of a waiter that Redis carries
 * out after the waiter completed (a poll sent before the grant message arrived can run after the caller released the
 * lock, on another pooled connection) is undone once the caller is done with the lock: see {@link Waiter#lateScript};
 * (5) a release that leaves the key free sends Redisson's unlock message on the key's lock channel: the hash is shared
 * with {@code RLock} (REENTRANT) callers of the key, who otherwise sleep beside a free lock until its time to live or
 * their wait runs out (see {@link #RELEASE_BODY}).
 */
final class HandoffLocks {

    private static final Log logger = LogFactory.getLog(HandoffLocks.class);

    /**
     * How long a waiter's queue entry lives without being refreshed (the longest a dead waiter stays in line), and the
     * longest lease a hand-off grants before the grantee claims its own (how long a grantee that died while queued keeps
     * the key from the next waiter): a third of the watchdog timeout, at most 5 s and at least 100 ms.
     */
    private final long entryTtlMillis;
    private final long grantMillis;

    /** How a script's reply says that the key is closed. */
    private static final long CLOSED = -1;

    /** How the acquisition script says that the waiter was buried (see {@link #BURY}): it did nothing. */
    private static final long BURIED = -2;

    /**
     * How long a buried waiter's tombstone lives: longer than any script of it can still be on its way — a command on a
     * connection that broke, or stalled in the network, reaches Redis within the connection's life or never, and
     * Linux gives up retransmitting on a half-open connection after about 15 minutes (tcp_retries2). Only waiters with
     * a script whose answer was lost are buried: none in normal operation.
     */
    private static final long TOMBSTONE_MILLIS = 30 * 60_000;

    /**
     * How often a waiter tries its first script again after a timeout or a lost connection (scripts are not re-sent by
     * Redisson, see {@link #eval}): as often as Redisson re-sends a command by default.
     */
    private static final int FIRST_SCRIPT_RETRIES = 4;

    private static final String CHANNEL_PREFIX = "distlock:handoff:";

    /** After the key in a close message: {@code <close number>|<owner>,<owner>...|}, then the reason. */
    private static final java.util.regex.Pattern CLOSED_WAITERS = java.util.regex.Pattern.compile("(\\d+)\\|(-?\\d+(?:,-?\\d+)*)\\|");

    /**
     * Lua shared by the scripts: the first live waiter (skipping list elements whose entry is gone or expired), and the
     * grant to it. KEYS[1] lock, KEYS[2] queue, KEYS[3] entries.
     */
    private static final String FUNCTIONS = """
            local function now_ms()
              local t = redis.call('time')
              return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            end
            local function live_head(now)
              while true do
                local head = redis.call('lindex', KEYS[2], 0)
                if head == false then
                  return false, 0
                end
                local entry = redis.call('hget', KEYS[3], head)
                if entry == false then
                  redis.call('lpop', KEYS[2])
                else
                  local sep = string.find(entry, ':', 1, true)
                  if tonumber(string.sub(entry, 1, sep - 1)) <= now then
                    redis.call('hdel', KEYS[3], head)
                    redis.call('lpop', KEYS[2])
                  else
                    return head, tonumber(string.sub(entry, sep + 1))
                  end
                end
              end
            end
            local function grant(head, lease, now, grant_ms, channel_prefix, key)
              redis.call('lpop', KEYS[2])
              redis.call('hdel', KEYS[3], head)
              local ttl = math.min(lease, grant_ms)
              redis.call('hset', KEYS[1], head, 1)
              redis.call('pexpire', KEYS[1], ttl)
              local client, owner = string.match(head, '^(.*):(%-?%d+)$')
              redis.call('publish', channel_prefix .. client,
                  'g|' .. owner .. '|' .. ttl .. '|' .. string.format('%.0f', now) .. '|' .. key)
            end
            -- a waiter leaves its place too, not only its entry: callers that try a held key with short waits would
            -- otherwise grow the list by one element per try for as long as the key is held. From the tail, where a
            -- short wait's element is; only when the waiter was queued (it had an entry)
            local function leave(field)
              if redis.call('hdel', KEYS[3], field) == 1 then
                redis.call('lrem', KEYS[2], -1, field)
              end
            end
            local function hand_off(grant_ms, channel_prefix, key)
              if redis.call('llen', KEYS[2]) == 0 then
                return
              end
              local now = now_ms()
              local head, lease = live_head(now)
              if head then
                grant(head, lease, now, grant_ms, channel_prefix, key)
              end
            end
            """;

    /**
     * KEYS: lock, queue, entries, closed, closes, the owner's tombstone. ARGV: [1] owner field, [2] lease ms (the
     * watchdog timeout for a watchdog
     * lock), [3] '1' to queue up when not acquired, '0' to try once (and leave the queue), [4] entry time to live ms,
     * [5] grant ms, [6] channel prefix, [7] key as the grantee knows it.
     * Returns {1} acquired (with the full lease), {0, pttl, now, closes} not acquired (queued with [3] = '1'; closes:
     * the key's close count, see {@link #CLOSE}), {-1, reason} closed, {-2} buried (nothing done).
     */
    private static final String ACQUIRE = "redis.replicate_commands()\n" + FUNCTIONS + """
            if redis.call('exists', KEYS[6]) == 1 then
              -- a script of a waiter whose caller is done, carried out late: it must neither take nor queue
              return {-2}
            end
            if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
              -- granted by a release whose message has not arrived (or was lost): claim it with the full lease. Before
              -- the closed mark: a grant made before the close makes this waiter the holder, which keeps its lock
              redis.call('pexpire', KEYS[1], ARGV[2])
              redis.call('hdel', KEYS[3], ARGV[1])
              return {1}
            end
            local closed = redis.call('get', KEYS[4])
            if closed then
              redis.call('hdel', KEYS[3], ARGV[1])
              return {-1, closed}
            end
            if redis.call('exists', KEYS[1]) == 0 then
              local now = 0
              local head = false
              local lease = 0
              if redis.call('llen', KEYS[2]) > 0 then
                now = now_ms()
                head, lease = live_head(now)
              end
              if head == false or head == ARGV[1] then
                if head then
                  redis.call('lpop', KEYS[2])
                end
                redis.call('hdel', KEYS[3], ARGV[1])
                redis.call('hset', KEYS[1], ARGV[1], 1)
                redis.call('pexpire', KEYS[1], ARGV[2])
                return {1}
              end
              -- free, with a live waiter ahead whose hand-off was lost or whose grant expired: it goes first
              grant(head, lease, now, tonumber(ARGV[5]), ARGV[6], ARGV[7])
            end
            local pttl = redis.call('pttl', KEYS[1])
            if ARGV[3] == '0' then
              leave(ARGV[1])
              return {0, pttl, 0}
            end
            local now = now_ms()
            if redis.call('hexists', KEYS[3], ARGV[1]) == 0 then
              redis.call('rpush', KEYS[2], ARGV[1])
            end
            local ttl = tonumber(ARGV[4])
            redis.call('hset', KEYS[3], ARGV[1], string.format('%.0f', now + ttl) .. ':' .. ARGV[2])
            redis.call('pexpire', KEYS[2], 2 * ttl)
            redis.call('pexpire', KEYS[3], 2 * ttl)
            local closes = redis.call('get', KEYS[5])
            if not closes then
              -- a key's count starts (or, lost or expired, starts again) above any number a close may have sent
              -- before: from Redis's clock, ms times 1000
              closes = string.format('%.0f', now * 1000)
              redis.call('set', KEYS[5], closes)
            end
            redis.call('pexpire', KEYS[5], 2 * ttl)
            return {0, pttl, string.format('%.0f', now), closes}
            """;

    /**
     * Releases the lock if ARGV[1] holds it and hands it to the next live waiter; otherwise only takes ARGV[1] out of
     * the queue (a waiter that gives up). KEYS: lock, queue, entries. ARGV: [1] owner field, [2] grant ms, [3] channel
     * prefix, [4] key, [5] the key's Redisson lock channel, [6] the publish command Redisson subscribes for. Returns 1
     * released, 0 not held.
     *
     * <p>A release that leaves the key free (no live waiter to hand it to) wakes the takers of the key's other exclusive
     * type: a REENTRANT caller on the same key (same hash) waits for Redisson's unlock message on the lock channel, else
     * for the lock's time to live or its own wait, whichever ends first — a FAIR holder's release must not leave it
     * asleep beside a free lock for the rest of that holder's lease. FAIR waiters need no message: they are granted here.
     */
    private static final String RELEASE_BODY = """
            if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
              leave(ARGV[1])
              return 0
            end
            redis.call('del', KEYS[1])
            hand_off(tonumber(ARGV[2]), ARGV[3], ARGV[4])
            if redis.call('exists', KEYS[1]) == 0 then
              redis.call(ARGV[6], ARGV[5], 'UNLOCK_MESSAGE')
            end
            return 1
            """.replace("UNLOCK_MESSAGE", String.valueOf(org.redisson.pubsub.LockPubSub.UNLOCK_MESSAGE));

    private static final String RELEASE = "redis.replicate_commands()\n" + FUNCTIONS + RELEASE_BODY;

    /**
     * The give-back of a waiter whose caller is done while a script of it may still be on its way (its answer was
     * lost): RELEASE, and a tombstone (KEYS[6], ARGV[7] ms) that makes every later acquisition script of this owner do
     * nothing. One answer is enough: what ran before is undone, what runs after does nothing (for the tombstone's
     * life). Without it, a give-back could only try again for a while, and a script delayed past that took the lock for
     * nobody. KEYS: as ACQUIRE. ARGV: as RELEASE, and [7] the tombstone's life. Returns as RELEASE.
     */
    private static final String BURY = "redis.replicate_commands()\n" + FUNCTIONS
            + "redis.call('set', KEYS[6], '1', 'px', ARGV[7])\n" + RELEASE_BODY;

    /** Hands a free lock to the next live waiter (after a forced release). KEYS as RELEASE; ARGV [1] grant ms, [2], [3]. */
    private static final String HAND_OFF_IF_FREE = "redis.replicate_commands()\n" + FUNCTIONS + """
            if redis.call('exists', KEYS[1]) == 0 then
              hand_off(tonumber(ARGV[1]), ARGV[2], ARGV[3])
            end
            return 1
            """;

    /** Sets the lock's time to live to ARGV[2] ms if ARGV[1] holds it: claim and watchdog renewal. 1 held, 0 not. */
    private static final String RENEW = """
            if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
              return 0
            end
            redis.call('pexpire', KEYS[1], ARGV[2])
            return 1
            """;

    /**
     * Closes a key: marks it (KEYS[4], value ARGV[1]), counts the close (KEYS[5]), empties the queue, and tells each
     * client with a waiter in it (once per client) which of its waiters the close took out of the queue, and the
     * close's number. The holder, if any, keeps its lock. ARGV: [1] reason, [2] channel prefix, [3] key, [4] the
     * count's time to live in ms (the queue's: twice the entry time to live). Message:
     * {@code c|<key length in bytes>|<key><close number>|<owner>,<owner>...|<reason>}. Returns the number of waiters
     * told.
     *
     * <p>The count orders closes against queueing scripts (each returns the count it read), by Redis's own order of
     * scripts rather than by clocks. It lives as long as the queue (refreshed by each queueing and close); a count that
     * is gone (expired, or lost in a failover) starts again from Redis's clock in ms times 1000, above any
     * number sent before — unless the clock stepped back by more than the time since, when a waiter may skip a leave
     * it needed: a stale entry, skipped once expired or granted for one grant, never a second holder.
     */
    private static final String CLOSE = "redis.replicate_commands()\n" + """
            redis.call('set', KEYS[4], ARGV[1])
            if redis.call('exists', KEYS[5]) == 0 then
              -- a count that was lost (failover, eviction, expiry) restarts above any number an old message may still
              -- carry: from Redis's clock in ms, times 1000
              local t = redis.call('time')
              local seed = tonumber(t[1]) * 1000000 + math.floor(tonumber(t[2]) / 1000) * 1000
              redis.call('set', KEYS[5], string.format('%.0f', seed))
            end
            local number = string.format('%.0f', redis.call('incr', KEYS[5]))
            redis.call('pexpire', KEYS[5], tonumber(ARGV[4]))
            local waiting = redis.call('hkeys', KEYS[3])
            local owners = {}
            local clients = {}
            for _, field in ipairs(waiting) do
              local client, owner = string.match(field, '^(.*):(%-?%d+)$')
              if client then
                if not owners[client] then
                  owners[client] = {}
                  table.insert(clients, client)
                end
                table.insert(owners[client], owner)
              end
            end
            for _, client in ipairs(clients) do
              redis.call('publish', ARGV[2] .. client, 'c|' .. string.len(ARGV[3]) .. '|' .. ARGV[3] .. number .. '|'
                  .. table.concat(owners[client], ',') .. '|' .. ARGV[1])
            end
            redis.call('del', KEYS[2], KEYS[3])
            return #waiting
            """;

    private final RedissonClient redisson;
    /**
     * Redisson's command executor when scripts must be confirmed by the replicas before they count (replicated Redis,
     * as Redisson's own locks are); {@code null} on a single server.
     */
    private final org.redisson.command.CommandAsyncExecutor synced;
    /**
     * Redisson's command executor on a single server, for the acquisition and release scripts: sent once, never
     * re-sent by Redisson's retry (see {@link #eval}); {@code null} when it cannot be reached.
     */
    private final org.redisson.command.CommandAsyncExecutor once;
    private final String clientId;
    private final ScheduledExecutorService timer;
    private final RedissonLockProvider provider;
    private final ConcurrentHashMap<Long, Waiter> waiting = new ConcurrentHashMap<>();
    private volatile CompletableFuture<Void> subscription;
    private volatile String publishCommand;

    HandoffLocks(RedissonLockProvider provider, RedissonClient redisson, String clientId, long watchdogMillis,
            ScheduledExecutorService timer) {
        this.entryTtlMillis = Math.max(100, Math.min(5_000, watchdogMillis / 3));
        this.synced = syncedExecutor(redisson);
        this.once = (synced == null)
                ? commandExecutor(redisson, "FAIR acquisition and release scripts may be re-sent by Redisson's retry")
                : null;
        this.grantMillis = entryTtlMillis;
        this.provider = provider;
        this.redisson = redisson;
        this.clientId = clientId;
        this.timer = timer;
    }

    /**
     * On a replicated Redis, Redisson's locks run their scripts "synced": a {@code WAIT} for the replicas before the
     * reply counts (and, with {@code checkLockSyncedSlaves}, the default, a failure when none confirmed), so that a failover cannot lose a lock its holder
     * was told it has. The hand-off lock's scripts do the same, through the same (internal) Redisson call; and a grant
     * reaches its grantee by a message published before that {@code WAIT}, so there a grantee confirms its grant with a
     * synced script before it takes it. Internal API: when it cannot be reached, plain scripts (logged).
     */
    private static org.redisson.command.CommandAsyncExecutor syncedExecutor(RedissonClient redisson) {
        org.redisson.config.Config config = redisson.getConfig();
        // cluster, sentinel, master/slave, replicated: every configuration that knows of replicas. Whatever
        // checkLockSyncedSlaves says, as for Redisson's locks: it only decides whether a WAIT nobody confirmed fails
        if (config.isSingleConfig()) {
            return null;
        }
        return commandExecutor(redisson, "FAIR locks on this replicated Redis are not confirmed by the replicas (a "
                + "failover may lose one)");
    }

    /** Redisson's (internal) command executor; {@code null}, logged with what that costs, when it cannot be reached. */
    private static org.redisson.command.CommandAsyncExecutor commandExecutor(RedissonClient redisson, String without) {
        try {
            if (redisson instanceof org.redisson.Redisson client) {
                return client.getCommandExecutor();
            }
        }
        catch (RuntimeException | LinkageError ex) {
            logger.warn("Could not reach Redisson's command executor: " + without, ex);
            return null;
        }
        logger.warn("Not a Redisson client (" + redisson.getClass().getName() + "): " + without);
        return null;
    }

    /**
     * Runs {@code script}: synced on a replicated Redis (see {@link #syncedExecutor}), else a plain cached script —
     * except the acquisition and release scripts, which Redisson must not re-send (as it does not re-send its own
     * unlock): a copy of an acquisition that timed out on one connection can still run after the retry took the lock
     * and its caller released it, and take the lock again for nobody; a re-sent release whose first copy ran answers
     * "not held", and the holder is told its lock was lost. Sent once, a failure is handled by the waiter (the next
     * poll; a give-back that buries it once the caller is done, see {@link Waiter#lateScript}) or by the release's
     * caller (an exception, and a give-back). The synced call never re-sends either.
     */
    private <T> CompletableFuture<T> eval(String key, String script, RScript.ReturnType type, List<Object> keys,
            Object... args) {
        org.redisson.client.protocol.RedisCommand<?> command = (type == RScript.ReturnType.LIST)
                ? org.redisson.client.protocol.RedisCommands.EVAL_LIST
                : org.redisson.client.protocol.RedisCommands.EVAL_LONG;
        @SuppressWarnings("unchecked")
        org.redisson.client.protocol.RedisCommand<T> typed = (org.redisson.client.protocol.RedisCommand<T>) command;
        if (synced != null) {
            return synced.<T>syncedEvalNoRetry(key, StringCodec.INSTANCE, typed, script, keys, args)
                    .toCompletableFuture();
        }
        if (once != null && (script == ACQUIRE || script == RELEASE || script == BURY)) {
            return once.<T, T>evalWriteNoRetryAsync(key, StringCodec.INSTANCE, typed, script, keys, args)
                    .toCompletableFuture();
        }
        return redisson.getScript(StringCodec.INSTANCE).<T>evalAsync(key, RScript.Mode.READ_WRITE, script, type, keys,
                args).toCompletableFuture();
    }

    /** Whether grants must be confirmed by a synced script before they are handed out. */
    boolean synced() {
        return synced != null;
    }

    static String queueKey(String key) {
        return RedissonObject.prefixName("distlock_queue", key);
    }

    static String entriesKey(String key) {
        return RedissonObject.prefixName("distlock_waiters", key);
    }

    static String closedKey(String key) {
        return RedissonObject.prefixName("distlock_closed", key);
    }

    static String closesKey(String key) {
        return RedissonObject.prefixName("distlock_closes", key);
    }

    private static List<Object> keys(String key) {
        return List.of(key, queueKey(key), entriesKey(key), closedKey(key), closesKey(key));
    }

    static String tombstoneKey(String key, String field) {
        return RedissonObject.prefixName("distlock_gone", key) + ":" + field;
    }

    /** The keys of the scripts of one owner: {@link #keys} and its tombstone. */
    private static List<Object> keys(String key, String field) {
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
     * not acquired within the wait; a caller handed the lock calls {@link Waiter#letGo()} before it releases it (or
     * when it does not use it after all).
     */
    Waiter acquire(String key, long owner, String field, long waitNanos, long leaseMillis) {
        Waiter waiter = new Waiter(key, owner, field, leaseMillis, LockDurations.deadline(System.nanoTime(), waitNanos),
                waitNanos > 0);
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
        return this.<Long>eval(key, RELEASE, RScript.ReturnType.LONG, keys(key), field, String.valueOf(grantMillis),
                CHANNEL_PREFIX, key, lockChannel(key), publishCommand()).thenApply(released -> released == 1L);
    }

    /** {@link #release}, and {@code field}'s tombstone: see {@link #BURY}. */
    CompletableFuture<Boolean> bury(String key, String field) {
        return this.<Long>eval(key, BURY, RScript.ReturnType.LONG, keys(key, field), field, String.valueOf(grantMillis),
                CHANNEL_PREFIX, key, lockChannel(key), publishCommand(), String.valueOf(TOMBSTONE_MILLIS))
                .thenApply(released -> released == 1L);
    }

    /** The channel Redisson's {@code RLock} waiters of {@code key} listen on for its unlock message. */
    static String lockChannel(String key) {
        return RedissonObject.prefixName("redisson_lock__channel", key);
    }

    /** Redisson's publish command ({@code spublish} with sharded pub/sub), read once. */
    private String publishCommand() {
        String command = publishCommand;
        if (command == null) {
            command = provider.publishCommand();
            publishCommand = command;
        }
        return command;
    }

    /** Extends {@code field}'s lock to {@code leaseMillis} if it still holds it. */
    CompletableFuture<Boolean> renew(String key, String field, long leaseMillis) {
        return this.<Long>eval(key, RENEW, RScript.ReturnType.LONG, List.<Object>of(key), field,
                String.valueOf(leaseMillis)).thenApply(held -> held == 1L);
    }

    /** After an operator deleted the lock: the next waiter gets it now rather than at its next poll. */
    CompletableFuture<Void> handOffIfFree(String key) {
        return this.<Long>eval(key, HAND_OFF_IF_FREE, RScript.ReturnType.LONG, keys(key), String.valueOf(grantMillis),
                CHANNEL_PREFIX, key).thenApply(ignored -> null);
    }

    /** Closes {@code key}; returns how many queued waiters were told. */
    long close(String key, String reason) {
        return RedissonLockProvider.join(this.<Long>eval(key, CLOSE, RScript.ReturnType.LONG, keys(key), reason,
                CHANNEL_PREFIX, key, String.valueOf(2 * entryTtlMillis)));
    }

    void reopen(String key) {
        RedissonLockProvider.join(redisson.getBucket(closedKey(key), StringCodec.INSTANCE).deleteAsync()
                .toCompletableFuture());
    }

    /**
     * The provider is closing: its timer stops, so polls and last tries would never run. Every waiter is answered now
     * (and leaves the queue), rather than never.
     */
    void shutdown() {
        for (Waiter waiter : waiting.values()) {
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
                Waiter waiter = waiting.get(owner);
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
                for (Waiter waiter : waiting.values()) {
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

    /**
     * One acquisition waiting in the queue. Completes once ({@link #done}); whichever of grant message, poll, close or
     * give-up takes {@code done} first decides, and a give-up always runs the release script, which passes on a grant
     * that arrived meanwhile.
     */
    final class Waiter {

        final String key;
        final long owner;
        final String field;
        final long leaseMillis;
        final long deadline;
        final boolean waits;
        final CompletableFuture<Granted> result = new CompletableFuture<>();
        final AtomicBoolean done = new AtomicBoolean();
        private volatile ScheduledFuture<?> poll;
        /** Redis's clock minus this JVM's nanoTime, in ns, from the last queueing reply; its uncertainty in ns. */
        private volatile long clockOffset;
        private volatile long clockError = Long.MAX_VALUE;
        /**
         * The key's close count read by this waiter's last queueing script ({@link Long#MAX_VALUE} while unknown: none
         * answered yet, or one whose answer was lost — it may have queued this waiter after any close).
         */
        private volatile long queuedAfterCloses = Long.MAX_VALUE;
        /**
         * Set when the caller is done with the lock it was handed (see {@link #letGo()}); completed once its release has
         * answered.
         */
        private volatile CompletableFuture<Void> letGo;
        /**
         * A script of this waiter may have done something nobody accounts for: its answer was lost (it may run yet),
         * or it came after the waiter was answered. Whatever it did is given back once the caller is done: see
         * {@link #lateScript}.
         */
        private volatile boolean unsettled;
        /**
         * A script of this waiter failed: it may be carried out yet, at any time. Its give-back buries the waiter
         * ({@link #BURY}) rather than only releasing, so that it does nothing then. Written before {@link #unsettled}.
         */
        private volatile boolean mayRunYet;

        Waiter(String key, long owner, String field, long leaseMillis, long deadline, boolean waits) {
            this.key = key;
            this.owner = owner;
            this.field = field;
            this.leaseMillis = leaseMillis;
            this.deadline = deadline;
            this.waits = waits;
        }

        /** Runs the acquisition script: queueing (and refreshing the entry) or, with {@code queue} false, a last try. */
        void attempt(boolean queue) {
            if (done.get()) {
                return;
            }
            long sent = System.nanoTime();
            CompletableFuture<List<Object>> reply;
            try {
                reply = HandoffLocks.this.<List<Object>>eval(key, ACQUIRE, RScript.ReturnType.LIST, keys(key, field),
                        field, String.valueOf(leaseMillis), queue ? "1" : "0", String.valueOf(entryTtlMillis),
                        String.valueOf(grantMillis), CHANNEL_PREFIX, key);
            }
            catch (RuntimeException ex) {
                fail(ex);
                return;
            }
            reply.whenComplete((answer, failure) -> {
                try {
                    if (failure != null) {
                        failed(queue, failure);
                    }
                    else {
                        answered(queue, answer, sent, System.nanoTime());
                    }
                }
                catch (Throwable unexpected) {
                    fail(unexpected);
                }
            });
        }

        private void answered(boolean queue, List<Object> answer, long sent, long received) {
            long code = Long.parseLong(answer.get(0).toString());
            if (code == 1) {
                finish(Granted.FULL);
                return;
            }
            if (code == CLOSED) {
                // the script took the entry out itself: nothing to leave
                closeAnswered(answer.get(1).toString());
                return;
            }
            if (code == BURIED) {
                // a script of a waiter that was buried (answered, its caller done): it did nothing. Defensive: a waiter
                // is buried only once answered
                if (done.compareAndSet(false, true)) {
                    cancelPoll();
                    waiting.remove(owner);
                    result.complete(null);
                }
                return;
            }
            if (queue) {
                // Invariant (with closed()): every "queued" answer records the close count its script read BEFORE it
                // reads done, and closed() completes the result BEFORE it reads the count. So when a close and this
                // answer race, either the close sees this count (and leaves if the script ran after it), or this
                // answer sees the close's result complete (gaveUp) and leaves itself.
                queuedAfterCloses = closesRead(answer);
            }
            if (done.get()) {
                // answered meanwhile (grant, close, give-up, deadline): a queueing script that ran after the caller was
                // done with the lock queued a ghost
                if (queue) {
                    lateScript();
                }
            }
            else if (!queue || System.nanoTime() - deadline >= 0) {
                // a last try that failed: the script has taken this waiter out of the queue
                if (done.compareAndSet(false, true)) {
                    waiting.remove(owner);
                    if (queue) {
                        // queued after all (the deadline passed while the queueing reply was on its way): leave
                        leaveQuietly();
                    }
                    result.complete(null);
                }
                else if (queue) {
                    lateScript();
                }
            }
            else {
                long redisNow = Long.parseLong(answer.get(2).toString());
                if (redisNow > 0) {
                    // the reply's Redis time was read between sent and received: the midpoint is off by half the trip
                    clockOffset = redisNow * 1_000_000 - (sent + (received - sent) / 2);
                    clockError = (received - sent) / 2 + 1_000_000;
                }
                // a close that takes done from here on reads the count written above
                polled = true;
                schedulePoll();
            }
        }

        /** The close count a queueing script read; unknown ({@link Long#MAX_VALUE}) when it found none or sent none. */
        private static long closesRead(List<Object> answer) {
            long closes = (answer.size() > 3) ? Long.parseLong(answer.get(3).toString()) : -1;
            return (closes < 0) ? Long.MAX_VALUE : closes;
        }

        /**
         * A command failed. A waiter that waits tries its first script again after a timeout or a lost connection (at
         * most {@link #FIRST_SCRIPT_RETRIES} times), and once queued polls on after any failure until its deadline
         * (Redis may come back, say after a restart that lost the queue: the next poll queues again); a failed last
         * try, another error of the first script, or any failure of a single try fails it. Either way the script may
         * have run, or run yet: see {@link #unsettled}.
         */
        private void failed(boolean queue, Throwable failure) {
            // the script may run yet, even after the caller got the lock another way and released it (a poll whose
            // connection broke with it on its way): given back once the caller is done. Written before done is read
            mayRunYet = true;
            unsettled = true;
            if (queue) {
                // the script may have run, and queued this waiter after a close: a close must not count on its entry
                // being gone. Written before done is read, as in answered()
                queuedAfterCloses = Long.MAX_VALUE;
            }
            if (done.get()) {
                // a script whose answer is lost may run yet, after the caller is done with the lock
                lateScript();
                return;
            }
            // a first script that timed out or lost its connection is not re-sent by Redisson (see eval): the waiter
            // tries again itself, as often as Redisson would have re-sent it, then fails as a REENTRANT call does once
            // Redisson's retries are spent; another error fails the call at once. Once queued, it polls on until its
            // deadline (Redis may come back with the queue lost: the next poll queues again)
            if (queue && System.nanoTime() - deadline < 0
                    && (polled || (transientFailure(failure) && ++firstScriptRetries <= FIRST_SCRIPT_RETRIES))) {
                schedulePoll();
                return;
            }
            fail(failure);
        }

        /** Whether a queueing script of this waiter was answered: from then on, a failed poll does not fail it. */
        private volatile boolean polled;
        /** Transient failures of the first script tried again; one attempt is on its way at a time. */
        private int firstScriptRetries;

        private static boolean transientFailure(Throwable failure) {
            Throwable cause = (failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null)
                    ? failure.getCause() : failure;
            return cause instanceof org.redisson.client.RedisTimeoutException
                    || cause instanceof org.redisson.client.RedisConnectionException;
        }

        private void schedulePoll() {
            long remaining = deadline - System.nanoTime();
            long delay = Math.min(Math.max(remaining, 0), TimeUnit.MILLISECONDS.toNanos(entryTtlMillis / 3));
            try {
                poll = timer.schedule(() -> attempt(deadline - System.nanoTime() > 0), delay, TimeUnit.NANOSECONDS);
            }
            catch (RuntimeException rejected) {
                fail(rejected);
                return;
            }
            if (done.get()) {
                poll.cancel(false);
            }
        }

        /**
         * The release of the previous holder made this waiter the owner, with a lease of {@code ttl} ms from Redis's
         * {@code grantedAt}. When that lease is shorter than the holder's own, a claim extends it — not waited for when
         * at least half the grant is left by this JVM's clock (so the claim has half the grant to arrive), waited for
         * otherwise (a message that sat in a paused JVM): a holder is never handed a lock about to expire under it.
         */
        void granted(long ttl, long grantedAt) {
            if (!done.compareAndSet(false, true)) {
                return;
            }
            cancelPoll();
            waiting.remove(owner);
            long error = clockError;
            long now = System.nanoTime();
            long grantedLocally = grantedAt * 1_000_000 - clockOffset;
            long elapsed = (error == Long.MAX_VALUE) ? Long.MAX_VALUE : now - grantedLocally + error;
            // on a replicated Redis the grant was published before the releaser's WAIT: confirm it, synced, first
            if (synced == null && elapsed < TimeUnit.MILLISECONDS.toNanos(ttl) / 2) {
                if (ttl >= leaseMillis) {
                    hand(Granted.FULL);
                    return;
                }
                long claimBy = grantedLocally - error + TimeUnit.MILLISECONDS.toNanos(ttl);
                hand(new Granted((claimBy == 0) ? 1 : claimBy));
                return;
            }
            // an old grant (a message that sat in a paused JVM), whatever its lease: handed out only once Redis
            // confirms it is still this waiter's, with the holder's whole lease
            renew(key, field, leaseMillis).whenComplete((held, failure) -> {
                if (failure != null) {
                    leaveQuietly();
                    result.completeExceptionally(failure);
                }
                else if (held) {
                    hand(Granted.FULL);
                }
                else {
                    // the grant ran out before this JVM got to it: the next waiter has it (or will); queue again,
                    // unless the caller stopped waiting meanwhile (its give-up found this waiter done, and left it)
                    waiting.put(owner, this);
                    done.set(false);
                    if (result.isDone()) {
                        abandon();
                    }
                    else {
                        attempt(System.nanoTime() - deadline < 0);
                    }
                }
            });
        }

        /**
         * The key was closed by its {@code number}th close, which took this waiter's entry out of the queue
         * ({@code number} 0: a close that says neither, or the waiter's own script that found the key closed and took
         * the entry out itself — see the callers). Nothing is left to take out, unless this waiter queued again since
         * (a reopen, and a poll whose script ran after it, read that close's number or a later one): only then it
         * leaves — not one script per waiter on every close.
         */
        void closed(String reason, long number) {
            if (done.compareAndSet(false, true)) {
                cancelPoll();
                waiting.remove(owner);
                result.completeExceptionally(new LockKeyClosedException(key, reason));
                // read after the result is complete: a queueing reply (or failure) being handled now either wrote
                // queuedAfterCloses before this read, or reads done (and finds the result complete) after it, and
                // leaves itself
                if (number == 0 || queuedAfterCloses >= number) {
                    leaveQuietly();
                }
            }
        }

        /** This waiter's own script found the key closed and took its entry out. */
        private void closeAnswered(String reason) {
            if (done.compareAndSet(false, true)) {
                cancelPoll();
                waiting.remove(owner);
                result.completeExceptionally(new LockKeyClosedException(key, reason));
            }
        }

        private void finish(Granted granted) {
            if (done.compareAndSet(false, true)) {
                cancelPoll();
                waiting.remove(owner);
                hand(granted);
            }
            else {
                // a script still on its way took the lock after the waiter was answered: after a give-up, failure,
                // close or deadline, or after a grant whose caller may have released the lock since
                lateScript();
            }
        }

        /**
         * Hands the lock to the caller; a caller that stopped waiting meanwhile (cancelled: its give-up found this waiter
         * done and did nothing) gets nothing, so the lock is given back here.
         */
        private void hand(Granted granted) {
            if (!result.complete(granted)) {
                leaveQuietly();
            }
        }

        /** Whether the caller has its answer and it is not the lock: cancelled, failed, or not acquired. */
        private boolean gaveUp() {
            return result.isCancelled() || result.isCompletedExceptionally()
                    || (result.isDone() && result.getNow(Granted.FULL) == null);
        }

        void fail(Throwable failure) {
            if (done.compareAndSet(false, true)) {
                cancelPoll();
                waiting.remove(owner);
                // the script may have run after the client gave up on it, or run yet: release or leave (and bury),
                // until Redis answers
                leaveQuietly();
                result.completeExceptionally(failure);
            }
            else {
                lateScript();
            }
        }

        /**
         * A script of this waiter ran (its answer is here) or may run yet (its answer was lost) after the waiter was
         * answered, and may have taken the lock, or queued the waiter again, for an acquisition its caller
         * is done with (seen in the FAIR contract fuzz: a poll sent before the grant message arrived waited for a
         * pooled connection and ran after the caller's release, on another connection, took the free lock for its whole
         * lease, and nobody held it). Whatever it did is given back once the caller is done: at once if the caller gave
         * up; after the caller's release has answered if it was handed the lock (not before: the give-back would race
         * that release and make it answer "not held"), or at once if it was not handed out after all (no release
         * comes). {@link #unsettled} is written before {@link #letGo} is read here, and the reverse in
         * {@link #letGo()}: at least one side sees the other; both giving back is harmless. The same flag, set by
         * {@link #failed} for a script whose answer was lost before the waiter was answered, makes the caller's let-go
         * or give-up give back too (see {@link HandoffLocks#acquire}).
         */
        private void lateScript() {
            unsettled = true;
            result.whenComplete((ignored, failure) -> {
                if (gaveUp()) {
                    leaveQuietly();
                    return;
                }
                CompletableFuture<Void> released = letGo;
                if (released != null) {
                    released.whenComplete((answered, ignoredFailure) -> leaveQuietly());
                }
            });
        }

        /**
         * The caller is done with the lock this waiter was handed: its release is about to be sent, or the provider did
         * not hand the lock out after all. Called before that release is sent (see {@link #lateScript}); the caller
         * completes the future returned once its release has answered (at once when there is none).
         */
        CompletableFuture<Void> letGo() {
            CompletableFuture<Void> released = new CompletableFuture<>();
            letGo = released;
            if (unsettled) {
                released.whenComplete((answered, failure) -> leaveQuietly());
            }
            return released;
        }

        /** The caller stopped waiting: leave the queue, or pass on the lock if it was granted meanwhile. */
        void abandon() {
            if (done.compareAndSet(false, true)) {
                cancelPoll();
                waiting.remove(owner);
                leaveQuietly();
            }
        }

        /**
         * Releases what this waiter may hold, or takes it out of the queue, until Redis answers; a waiter with a script
         * that may run yet is buried as well (one answer is then enough, see {@link #BURY}).
         */
        private void leaveQuietly() {
            if (mayRunYet) {
                provider.giveBack(key, () -> bury(key, field), leaseMillis);
            }
            else {
                provider.giveBack(key, () -> release(key, field), leaseMillis);
            }
        }

        private void cancelPoll() {
            ScheduledFuture<?> scheduled = poll;
            if (scheduled != null) {
                scheduled.cancel(false);
            }
        }
    }
}

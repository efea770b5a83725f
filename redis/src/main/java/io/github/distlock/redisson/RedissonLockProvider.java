package io.github.distlock.redisson;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockHolderInfo;
import io.github.distlock.spi.LockInspector;
import io.github.distlock.spi.NotALockException;
import io.github.distlock.spi.LockInstance;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.redisson.RedissonObject;
import org.redisson.api.RLock;
import org.redisson.api.RScript;
import org.redisson.api.RedissonClient;
import org.redisson.client.RedisTimeoutException;
import org.redisson.client.codec.LongCodec;
import org.redisson.client.codec.StringCodec;

/**
 * Locks on Redisson's {@link RLock} ({@code REENTRANT}) and {@code RReadWriteLock} ({@code READ}, {@code WRITE}), and
 * our own hand-off lock ({@code FAIR}, {@link HandoffLocks}): a Redis hash whose field is the owner
 * ({@code <client id>:<owner id>}), with publish/subscribe wake-up of waiters and watchdog renewal.
 *
 * <p>Each acquisition has an owner of its own ({@link io.github.distlock.spi.LockOwner}), passed where Redisson would
 * use the thread id: a lock that an acquisition left behind (its reply came too late) can be re-entered by nobody,
 * and is given back by that owner. A fresh lock object is taken per call: Redisson's lock objects keep
 * per-acquisition state.
 *
 * <p>Fencing tokens come from a counter beside the lock ({@code redisson_lock_token:{key}}), issued by a script that
 * first checks that the lock is still this owner's, so tokens follow the order in which holders held the lock.
 *
 * <p>As a {@link LockInspector} it reads and deletes every hold of a key in one script (the hash of
 * {@code REENTRANT}/{@code FAIR}, the {@code distlock_rw:{<key>}} hash of {@code READ}/{@code WRITE} with each
 * reader's lease keys, and the permits), see {@code INSPECT}; and it announces this
 * instance in a string {@code distlock:instance:{<client id>}} (one {@code SET ... PX}, no script: lock scripts are what
 * operators count) that expires after the watchdog timeout unless refreshed (every third of it) — the client id being
 * the first part of every owner field this client writes.
 */
public class RedissonLockProvider implements LockProvider, LockInspector, AutoCloseable {

    private static final Log logger = LogFactory.getLog(RedissonLockProvider.class);

    /** Redisson's lease value for "no fixed lease: renew by watchdog". */
    private static final long WATCHDOG = -1;

    /** How long an unused fencing counter is kept; see {@link #ISSUE_TOKEN}. */
    private static final Duration FENCING_COUNTER_TTL = Duration.ofDays(7);

    /**
     * Issues a token if the lock (KEYS[1]) is held by the owner field ARGV[1]: the counter (KEYS[2]) plus one, but never
     * less than Redis's clock in microseconds. The clock floor is what keeps tokens rising when the counter is gone
     * (restart without persistence, expiry when unused) or behind (failover to a replica that lagged, restore of an
     * older snapshot): as long as the serving node's clock is ahead of the one that issued the last token, and no key
     * is locked more than once per microsecond, a token is higher than every token issued before. Lua numbers are
     * doubles, exact up to 2^53; microseconds since 1970 stay below that until the year 2255.
     */
    private static final String ISSUE_TOKEN = """
            if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
              return -1
            end
            redis.replicate_commands()
            local now = redis.call('time')
            local token = tonumber(now[1]) * 1000000 + tonumber(now[2])
            local current = tonumber(redis.call('get', KEYS[2]) or '0')
            if current ~= nil and current >= token then
              token = current + 1
            end
            redis.call('set', KEYS[2], string.format('%.0f', token), 'px', ARGV[2])
            return token
            """;

    /**
     * Sends Redisson's UNLOCK message on the read/write hash's channel (KEYS[2]) when the hash (KEYS[1]) is gone;
     * ARGV[1] is the publish command, ARGV[2] the message. Redisson's write-lock release wakes the waiters with its
     * READ_UNLOCK message only, which runs the listeners registered at that moment and stores nothing for the others:
     * an asynchronous taker whose attempt is on its way (it found the lock held just before the release) registers its
     * listener after the message and sleeps through a free lock for its whole wait or the lease it saw. UNLOCK also
     * leaves a permit that such a taker finds when it registers, so it tries again at once.
     */
    static final String WAKE_IF_FREE = """
            if redis.call('exists', KEYS[1]) == 0 then
              redis.call(ARGV[1], KEYS[2], ARGV[2])
              return 1
            end
            return 0
            """;

    /** Prefix of the hash naming the instance behind a client id; the id is a hash tag of its own. */
    static final String INSTANCE_KEY_PREFIX = "distlock:instance:";

    /**
     * Reads, and when ARGV[1] is '1' evicts, every hold of a key in one atomic step: the hash of {@code REENTRANT} and
     * {@code FAIR} (KEYS[1], its channel KEYS[2]), Redisson's read/write hash (KEYS[3], its channel KEYS[4]; each
     * reader's lease lives in its own keys {@code <KEYS[3]>:<field>:rwlock_timeout:<n>}, one per hold) and the permits
     * (KEYS[5], members {@code <N>|<owner>} scored by expiry). All five share the key's hash slot.
     *
     * <p>ARGV[2] is the owner that must hold the key ('' for any), ARGV[3] the publish command, ARGV[4] and ARGV[5]
     * the wake-up messages of the two hashes. With an owner, only that owner's holds are taken: its field of the
     * exclusive hash, its read and write fields (and its readers' lease keys), its permits; the read/write hash then
     * gets the time to live of the readers left, as Redisson's own read unlock sets it, and is deleted (waking the
     * writers) only when no live reader is left. Without one, every hold. Only live holds count: a reader whose lease
     * keys all expired, or a permit past its expiry, holds nothing (it neither shows nor makes an owner "hold").
     *
     * <p>Returns {released (1/0), exclusive hash deleted (1/0), then mode, owner, remaining ms for each holder}: the
     * holders evicted when released, otherwise every live holder now. Before anything is touched, every key that exists
     * must look like distlock's (see {@link #checkKey}: with an empty prefix the key could name anything, a web session
     * is a hash too): otherwise an error starting with {@value #NOT_A_LOCK}, and nothing is deleted.
     */
    private static final String INSPECT = """
            redis.replicate_commands()
            local function lock_hash(key, kind, what)
              if kind ~= 'hash' then
                return redis.error_reply('NOTALOCK the ' .. what .. ' key holds a ' .. kind .. ', not a lock|')
              end
              local pttl = redis.call('pttl', key)
              if pttl <= 0 then
                return redis.error_reply('NOTALOCK the ' .. what .. ' key is a hash without a time to live, not a lock|')
              end
              local flat = redis.call('hgetall', key)
              for i = 1, #flat, 2 do
                local field, value = flat[i], flat[i + 1]
                local valid
                if field == 'mode' then
                  valid = (value == 'read' or value == 'write')
                else
                  valid = (string.match(field, '^.+:%-?%d+$') ~= nil or string.match(field, '^.+:%-?%d+:write$') ~= nil)
                    and string.match(value, '^%d+$') ~= nil
                end
                if not valid then
                  return redis.error_reply('NOTALOCK the ' .. what .. ' key is a hash whose fields are not those of a lock|')
                end
              end
              return {pttl, flat}
            end
            local function reader_pttl(field, count)
              local most = -2
              for i = tonumber(count), 1, -1 do
                most = math.max(most, redis.call('pttl', KEYS[3] .. ':' .. field .. ':rwlock_timeout:' .. i))
              end
              return most
            end
            local function drop_reader_keys(field, count)
              for i = tonumber(count), 1, -1 do
                redis.call('del', KEYS[3] .. ':' .. field .. ':rwlock_timeout:' .. i)
              end
            end
            local owner = ARGV[2]
            -- read and check everything first: a key that is not a lock is refused before anything is deleted
            local holders = {}
            local exclusive = nil
            local kind = redis.call('type', KEYS[1])['ok']
            if kind ~= 'none' then
              exclusive = lock_hash(KEYS[1], kind, 'lock')
              if exclusive.err then
                return exclusive
              end
              for i = 1, #exclusive[2], 2 do
                if exclusive[2][i] ~= 'mode' then
                  table.insert(holders, {'exclusive', exclusive[2][i], exclusive[1]})
                end
              end
            end
            local shared = nil
            kind = redis.call('type', KEYS[3])['ok']
            if kind ~= 'none' then
              shared = lock_hash(KEYS[3], kind, 'read/write')
              if shared.err then
                return shared
              end
              for i = 1, #shared[2], 2 do
                local field, value = shared[2][i], shared[2][i + 1]
                if field ~= 'mode' then
                  local writer = string.match(field, '^(.+):write$')
                  if writer then
                    table.insert(holders, {'write', writer, shared[1]})
                  else
                    local left = reader_pttl(field, value)
                    if left > 0 then
                      table.insert(holders, {'read', field, left})
                    end
                  end
                end
              end
            end
            local now = nil
            kind = redis.call('type', KEYS[5])['ok']
            if kind ~= 'none' then
              if kind ~= 'zset' then
                return redis.error_reply('NOTALOCK the permits key holds a ' .. kind .. ', not permits|')
              end
              local t = redis.call('time')
              now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
              local members = redis.call('zrange', KEYS[5], 0, -1, 'withscores')
              for i = 1, #members, 2 do
                local field = string.match(members[i], '^%d+|(.+:%-?%d+)$')
                if field == nil then
                  return redis.error_reply('NOTALOCK the permits key has members that are not permits|')
                end
                local left = tonumber(members[i + 1]) - now
                if left > 0 then
                  table.insert(holders, {'permit', field, left})
                end
              end
            end
            local evicted = {}
            for _, holder in ipairs(holders) do
              if owner == '' or holder[2] == owner then
                table.insert(evicted, holder)
              end
            end
            local result = {'0', '0'}
            local listed = holders
            if ARGV[1] == '1' and #evicted > 0 then
              result[1] = '1'
              listed = evicted
              if exclusive and (owner == '' or redis.call('hexists', KEYS[1], owner) == 1) then
                result[2] = '1'
                redis.call('del', KEYS[1])
                redis.call(ARGV[3], KEYS[2], ARGV[4])
              end
              if shared then
                local flat = shared[2]
                local touched = false
                local live = -3
                local other_writer = false
                for i = 1, #flat, 2 do
                  local field, value = flat[i], flat[i + 1]
                  if field ~= 'mode' then
                    local writer = string.match(field, '^(.+):write$')
                    if owner == '' or field == owner or writer == owner then
                      touched = true
                      redis.call('hdel', KEYS[3], field)
                      if not writer then
                        drop_reader_keys(field, value)
                      end
                    elseif writer then
                      other_writer = true
                    else
                      live = math.max(live, reader_pttl(field, value))
                    end
                  end
                end
                -- what is left decides, as in Redisson's read unlock: a writer keeps the hash as it is, live readers
                -- give it their longest lease, and a hash with neither is deleted and its waiters woken
                if touched and not other_writer then
                  if live > 0 then
                    redis.call('pexpire', KEYS[3], live)
                  else
                    redis.call('del', KEYS[3])
                    redis.call(ARGV[3], KEYS[4], ARGV[5])
                    redis.call(ARGV[3], KEYS[4], ARGV[4])
                  end
                end
              end
              if now then
                if owner == '' then
                  redis.call('del', KEYS[5])
                else
                  local members = redis.call('zrange', KEYS[5], 0, -1)
                  for _, member in ipairs(members) do
                    if string.match(member, '^%d+|(.+)$') == owner then
                      redis.call('zrem', KEYS[5], member)
                    end
                  end
                end
              end
            end
            for _, holder in ipairs(listed) do
              table.insert(result, holder[1])
              table.insert(result, holder[2])
              table.insert(result, string.format('%.0f', holder[3]))
            end
            return result
            """;

    /** How the script's refusal of a key that is not a lock starts. */
    static final String NOT_A_LOCK = "NOTALOCK";

    /** Reads the instance entry on the master, as the lock scripts do (a replica may lag behind). */
    private static final String READ_INSTANCE = "return redis.call('get', KEYS[1])";

    private final RedissonClient redisson;
    private final String clientId;
    private volatile LockInstance announced;
    private java.util.concurrent.ScheduledFuture<?> announcing;
    private volatile CompletableFuture<Long> pendingPing;
    /** Written and read on the give-back thread only. */
    private CompletableFuture<?> pendingAnnouncement;
    private final long watchdogMillis;
    private final LeaseMonitor monitor;
    private final ScheduledExecutorService giveBacks;
    private final HandoffLocks handoffs;
    private final PermitLocks permits;

    /**
     * @param redisson the client the locks live in; its {@code lockWatchdogTimeout} also paces the check that
     * reports a watchdog lock lost while it is held
     */
    public RedissonLockProvider(RedissonClient redisson) {
        this.redisson = redisson;
        this.clientId = redisson.getId();
        this.watchdogMillis = redisson.getConfig().getLockWatchdogTimeout();
        this.monitor = new LeaseMonitor(watchdogMillis);
        org.redisson.config.Config config = redisson.getConfig();
        if (!config.isCheckLockSyncedSlaves() && (config.isClusterConfig() || config.isSentinelConfig())) {
            logger.warn("Redisson's checkLockSyncedSlaves is off on a replicated Redis: a lock whose write no replica "
                    + "confirmed is granted anyway, and a failover can lose it or bring back one already released "
                    + "(docs/deployment.md). Leave it on unless you measured why not.");
        }
        java.util.concurrent.ScheduledThreadPoolExecutor executor = new java.util.concurrent.ScheduledThreadPoolExecutor(1,
                task -> {
                    Thread thread = new Thread(task, "distlock-give-back");
                    thread.setDaemon(true);
                    return thread;
                });
        // deferred claims of short holds are cancelled by the thousand per second: don't keep them queued
        executor.setRemoveOnCancelPolicy(true);
        this.giveBacks = executor;
        this.handoffs = new HandoffLocks(this, redisson, clientId, watchdogMillis, giveBacks);
        this.permits = new PermitLocks(this, redisson, giveBacks);
    }

    /** Every type: {@code RLock}, the hand-off lock, the two halves of {@code RReadWriteLock}; all but READ fenced. */
    @Override
    public boolean supports(LockType type, boolean fenced) {
        return !fenced || type != LockType.READ;
    }

    /** Permits: see {@link PermitLocks}. */
    @Override
    public boolean supportsPermits() {
        return true;
    }

    private RLock lock(LockType type, String key) {
        return switch (type) {
            case REENTRANT -> redisson.getLock(key);
            // the hand-off lock's hash is the one RLock writes: this object names it and asks HEXISTS for stillHeld
            case FAIR -> redisson.getLock(key);
            // a key of their own: Redisson's read/write scripts only look at the hash's 'mode' field, which the
            // other types never write, so on one hash a reader could be granted beside a REENTRANT holder, and its
            // release could delete that holder's lock. Apart, the two families don't exclude each other (documented)
            // but can never corrupt each other.
            case READ -> redisson.getReadWriteLock(readWriteKey(key)).readLock();
            case WRITE -> redisson.getReadWriteLock(readWriteKey(key)).writeLock();
        };
    }

    /**
     * The Redis key of the READ/WRITE lock of {@code key}: {@code distlock_rw:{<key>}} (in {@code key}'s slot). Not
     * {@code <key>:rw}, which was the REENTRANT lock of a key named {@code <key>:rw} too: its release deleted the
     * read/write hash under its holders, and a second writer got in.
     */
    static String readWriteKey(String key) {
        return RedissonObject.prefixName("distlock_rw", key);
    }

    /** The hash field Redisson writes for {@code owner}: the write half of a read/write lock adds a suffix. */
    private String ownerField(LockType type, long owner) {
        return clientId + ":" + owner + ((type == LockType.WRITE) ? ":write" : "");
    }

    @Override
    public CompletableFuture<LockHandle> acquire(LockRequest request) {
        if (!supports(request.type(), request.fenced())) {
            throw new IllegalArgumentException("Redisson locks of type READ cannot be fenced: readers take no token");
        }
        checkKey(request.key());
        RLock lock = lock(request.type(), request.key());
        long owner = request.owner().id();
        // Milliseconds, rounded up, whatever the caller's unit: for watchdog leases Redisson hands the wait to its
        // scripts as milliseconds without converting it (a fair lock's queue timeout came out 10^6 times too long)
        long waitMillis = LockDurations.ceilMillis(request.waitNanos());
        long leaseMillis = request.watchdog() ? watchdogMillis : LockDurations.ceilMillis(request.leaseNanos());
        long lease = request.watchdog() ? WATCHDOG : leaseMillis;
        CompletableFuture<LockHandle> result = new CompletableFuture<>();
        if (request.permits() > 1) {
            acquirePermit(request, lock, owner, leaseMillis, result);
            return result;
        }
        if (request.type() == LockType.FAIR) {
            acquireHandoff(request, lock, owner, leaseMillis, result);
            return result;
        }
        lock.tryLockAsync(waitMillis, lease, TimeUnit.MILLISECONDS, owner).whenComplete((acquired, failure) -> {
            try {
                completeAcquisition(request, lock, owner, leaseMillis, acquired, failure, result);
            }
            catch (Throwable unexpected) {
                // never leave the caller waiting forever with a lock it can't know it holds
                giveBack(lock, owner, leaseMillis);
                result.completeExceptionally(unexpected);
            }
        });
        return result;
    }

    private void completeAcquisition(LockRequest request, RLock lock, long owner, long leaseMillis, Boolean acquired,
            Throwable failure, CompletableFuture<LockHandle> result) {
            if (failure != null) {
                Throwable cause = unwrap(failure);
                // The script may still run after the client gave up on its reply (a stalled server, a lost packet):
                // a lock nobody would release. Only this owner can hold it, so giving it back can free nothing else.
                // Always, even for a connection failure: Redisson reports the last attempt's error, and an earlier
                // attempt may have sent the script (seen on a cluster failover).
                giveBack(lock, owner, leaseMillis);
                if (isSubscriptionTimeout(cause)) {
                    // Redisson's subscription timer raced its own "wait is over" timer: the lock was found held, so
                    // this is contention, not a backend failure
                    result.complete(null);
                }
                else {
                    result.completeExceptionally(cause);
                }
                return;
            }
            if (!acquired) {
                result.complete(null);
                return;
            }
            RedissonLockHandle handle = new RedissonLockHandle(this, lock, owner, ownerField(request.type(), owner),
                    leaseMillis, request.watchdog() ? monitor : null, RedissonLockHandle.RLOCK);
            completeHandle(request, handle, result);
    }

    /** Hands out {@code handle}, after issuing its token when the request is fenced. */
    private void completeHandle(LockRequest request, RedissonLockHandle handle, CompletableFuture<LockHandle> result) {
            if (!request.fenced()) {
                complete(result, handle);
                return;
            }
            handle.issueToken().whenComplete((token, tokenFailure) -> {
                if (tokenFailure != null) {
                    handle.releaseAsync();
                    result.completeExceptionally(unwrap(tokenFailure));
                }
                else if (token < 0) {
                    // lost between acquisition and token (a lease shorter than a round trip): never hand it out
                    handle.notHandedOut();
                    result.complete(null);
                }
                else {
                    complete(result, handle);
                }
            });
    }

    /** One of {@code request.permits()} permits of the key: see {@link PermitLocks}. */
    private void acquirePermit(LockRequest request, RLock lock, long owner, long leaseMillis,
            CompletableFuture<LockHandle> result) {
        if (request.type() != LockType.REENTRANT || request.fenced()) {
            throw new IllegalArgumentException("permits = " + request.permits() + " cannot be combined with "
                    + (request.fenced() ? "fencing" : "type " + request.type()) + ": permits are REENTRANT and unfenced");
        }
        String key = request.key();
        String field = ownerField(LockType.REENTRANT, owner);
        CompletableFuture<Boolean> taken = permits.acquire(key, field, request.permits(), request.waitNanos(), leaseMillis);
        result.whenComplete((ignored, failure) -> {
            if (result.isCancelled()) {
                taken.cancel(false);
            }
        });
        taken.whenComplete((acquired, failure) -> {
            if (failure != null) {
                if (!(failure instanceof java.util.concurrent.CancellationException)) {
                    // the script may have run after the client gave up on its reply
                    giveBack(key, () -> permits.release(key, request.permits(), field), leaseMillis);
                    result.completeExceptionally(unwrap(failure));
                }
                return;
            }
            if (!acquired) {
                result.complete(null);
                return;
            }
            RedissonLockHandle handle = new RedissonLockHandle(this, lock, owner, field, leaseMillis,
                    request.watchdog() ? monitor : null, RedissonLockHandle.PERMIT);
            handle.permits = request.permits();
            complete(result, handle);
        });
    }

    /**
     * A {@code FAIR} lock: the hand-off lock of {@link HandoffLocks}. A caller that stops waiting (the template cancels
     * {@code result}) leaves the queue, or passes on a lock granted to it meanwhile.
     */
    private void acquireHandoff(LockRequest request, RLock lock, long owner, long leaseMillis,
            CompletableFuture<LockHandle> result) {
        String field = ownerField(LockType.FAIR, owner);
        HandoffLocks.Waiter waiter = handoffs.acquire(request.key(), owner, field, request.waitNanos(), leaseMillis);
        CompletableFuture<HandoffLocks.Granted> granted = waiter.result;
        result.whenComplete((ignored, failure) -> {
            if (result.isCancelled()) {
                granted.cancel(false);
            }
        });
        granted.whenComplete((grant, failure) -> {
            if (failure != null) {
                if (!(failure instanceof java.util.concurrent.CancellationException)) {
                    result.completeExceptionally(unwrap(failure));
                }
                return;
            }
            if (grant == null) {
                result.complete(null);
                return;
            }
            try {
                RedissonLockHandle handle = new RedissonLockHandle(this, lock, owner, field, leaseMillis,
                        request.watchdog() ? monitor : null, RedissonLockHandle.HANDOFF);
                handle.waiter = waiter;
                if (grant.claimNeeded()) {
                    deferClaim(handle, grant.claimBy());
                }
                completeHandle(request, handle, result);
            }
            catch (Throwable unexpected) {
                waiter.letGo().complete(null);
                giveBack(request.key(), () -> handoffs.release(request.key(), field), leaseMillis);
                result.completeExceptionally(unexpected);
            }
        });
    }

    /**
     * Schedules the claim halfway between now and the grant's end: a hot key's holds last microseconds, and a lock
     * released before then needs no claim (the release cancels it) — one command per hand-off fewer. At least a
     * quarter of the grant is left for the claim to land: a holder was handed the lock with half the grant left.
     */
    private void deferClaim(RedissonLockHandle handle, long claimBy) {
        long delay = Math.max(0, (claimBy - System.nanoTime()) / 2);
        try {
            handle.pendingClaim = giveBacks.schedule(() -> claim(handle, claimBy), delay, TimeUnit.NANOSECONDS);
        }
        catch (RuntimeException rejected) {
            // closed: the lock runs out with its grant, as every lock of a closed provider runs out
        }
    }

    /**
     * Extends a hand-off's grant to the holder's own lease, without holding up the holder: retried until it lands or
     * the grant runs out ({@code claimBy}), when the holder is told that its lock is lost (unless confirmed by then).
     */
    private void claim(RedissonLockHandle handle, long claimBy) {
        handoffs.renew(handle.lock().getName(), handle.ownerField(), handle.leaseMillis()).whenComplete((held, failure) -> {
            if (failure == null) {
                if (held) {
                    handle.confirmedAt = System.nanoTime();
                }
                else {
                    handle.lost("its grant ran out before the claim of its own lease reached Redis");
                }
                return;
            }
            long left = claimBy - System.nanoTime();
            if (left <= 0) {
                handle.lost("the claim of its own lease did not reach Redis before the grant ran out: " + failure);
                return;
            }
            try {
                giveBacks.schedule(() -> claim(handle, claimBy), Math.min(left, TimeUnit.MILLISECONDS.toNanos(100)),
                        TimeUnit.NANOSECONDS);
            }
            catch (RuntimeException rejected) {
                // closed
            }
        });
    }

    /** Closes {@code key} for {@code FAIR} locks: see {@link LockProvider#closeKey}. */
    @Override
    public long closeKey(String key, String reason) {
        checkKey(key);
        return handoffs.close(key, reason);
    }

    @Override
    public void reopenKey(String key) {
        checkKey(key);
        handoffs.reopen(key);
    }

    /**
     * Refuses lock keys this provider cannot keep apart from others': see {@link #checkHashTag} and
     * {@link #checkNamespace}.
     */
    static void checkKey(String key) {
        checkHashTag(key);
        checkNamespace(key);
    }

    /**
     * Redisson derives companion keys (unlock latch, fencing counter) from the lock's name: with a '{' that opens no
     * non-empty hash tag, or a '}' that closes none, they land in other Redis Cluster slots than the lock, and every
     * release (every FAIR script) fails (CROSSSLOT).
     * Refused on every topology, so that a key that works on one server does not break on a cluster.
     */
    static void checkHashTag(String key) {
        int open = key.indexOf('{');
        if (open < 0) {
            if (key.indexOf('}') >= 0) {
                // the companions are named <prefix>:{<key>}: this '}' would end their hash tag early, and they would
                // hash by part of the key while the lock hashes by all of it (every FAIR script a CROSSSLOT)
                throw new IllegalArgumentException("Lock key '" + key + "' has a '}' that closes no hash tag: on Redis "
                        + "Cluster its companion keys would land in other slots and it could never be taken. Use a "
                        + "complete hash tag such as {tenant-7}, or no braces");
            }
            return;
        }
        int close = key.indexOf('}', open + 1);
        if (close < 0 || close == open + 1) {
            throw new IllegalArgumentException("Lock key '" + key + "' has a '{' that opens no hash tag (a non-empty "
                    + "{...}): on Redis Cluster its companion keys would land in other slots and it could never be "
                    + "released. Use a complete hash tag such as {tenant-7}, or no braces");
        }
    }

    /**
     * The companions of a lock — its read/write hash, FAIR queue, permits, fencing counter — are named
     * {@code distlock_<what>:{<key>}} and {@code redisson_<what>:{<key>}}. A lock key in those namespaces could be
     * another lock's companion (a WRONGTYPE for that lock, or worse), and a key that is one whole hash tag
     * ({@code {x}}) has the companions of the key inside it; both are refused. Keys normally start with
     * {@code distlock.key-prefix} ({@code lock:}), which keeps them out; only an empty prefix lets them in.
     */
    static void checkNamespace(String key) {
        // Redisson names a companion prefix:{key} for a key without braces and prefix:key for one with them, so 'x'
        // and '{x}' would share every companion (a force release of '{x}' freed the write lock of 'x')
        if (key.length() > 2 && key.charAt(0) == '{' && key.charAt(key.length() - 1) == '}'
                && key.indexOf('{', 1) < 0) {
            throw new IllegalArgumentException("Lock key '" + key + "' is one whole hash tag: its Redis companions "
                    + "(read/write hash, FAIR queue, fencing counter) would be those of the key '"
                    + key.substring(1, key.length() - 1) + "'. Put text outside the braces (order:" + key
                    + ") or use a key prefix (distlock.key-prefix, default 'lock:')");
        }
        if (key.startsWith("distlock_") || key.startsWith("redisson_")) {
            throw new IllegalArgumentException("Lock key '" + key + "' is in a namespace distlock keeps for the Redis "
                    + "keys that go with a lock (distlock_*, redisson_*): use another name, or a key prefix "
                    + "(distlock.key-prefix, default 'lock:')");
        }
    }

    private void complete(CompletableFuture<LockHandle> result, RedissonLockHandle handle) {
        if (handle.monitor != null) {
            monitor.watch(handle);
        }
        if (!result.complete(handle)) {
            handle.releaseAsync();
        }
    }

    /**
     * Releases what {@code owner} may hold of {@code lock}, again until it is released or Redis has answered "not held"
     * twice (the second answer was asked for after the first arrived, so a script that was still on its way when the
     * first was sent has run by then), and at most for the lock's lease, after which it has expired anyway.
     */
    void giveBack(RLock lock, long owner, long leaseMillis) {
        giveBack(lock.getName(), () -> lock.unlockAsync(owner).toCompletableFuture().handle((ignored, failure) -> {
            if (failure == null) {
                if (lock instanceof org.redisson.RedissonWriteLock) {
                    wakeAfterWriteRelease(lock);
                }
                return Boolean.TRUE;
            }
            if (unwrap(failure) instanceof IllegalMonitorStateException) {
                return Boolean.FALSE;
            }
            throw (failure instanceof CompletionException completion) ? completion : new CompletionException(failure);
        }), leaseMillis);
    }

    /**
     * Runs {@code unlock} (true: released, false: not held) until it releases or Redis has answered "not held" twice,
     * and at most for the lock's lease.
     */
    void giveBack(String name, java.util.function.Supplier<CompletableFuture<Boolean>> unlock, long leaseMillis) {
        long period = Math.max(50, Math.min(1000, leaseMillis / 10));
        long deadline = LockDurations.deadline(System.nanoTime(), TimeUnit.MILLISECONDS.toNanos(leaseMillis));
        giveBack(name, unlock, deadline, period, 0);
    }

    private void giveBack(String name, java.util.function.Supplier<CompletableFuture<Boolean>> unlock, long deadline,
            long period, int notHeldAnswers) {
        CompletableFuture<Boolean> attempt;
        try {
            attempt = unlock.get();
        }
        catch (RuntimeException ex) {
            // client shut down: the lock expires within its lease
            return;
        }
        attempt.whenComplete((released, failure) -> {
            if (failure == null && released) {
                logger.info("Gave back lock '" + name + "', taken for a call that had already failed or "
                        + "stopped waiting");
                return;
            }
            int answers = (failure == null) ? notHeldAnswers + 1 : notHeldAnswers;
            if (answers >= 2 || System.nanoTime() - deadline > 0) {
                return;
            }
            try {
                giveBacks.schedule(() -> giveBack(name, unlock, deadline, period, answers), period,
                        TimeUnit.MILLISECONDS);
            }
            catch (RuntimeException rejected) {
                // shutting down: the lock expires within its lease
            }
        });
    }

    private CompletableFuture<Long> issueToken(RLock lock, String ownerField) {
        String counter = RedissonObject.prefixName("redisson_lock_token", lock.getName());
        return redisson.getScript(LongCodec.INSTANCE).<Long>evalAsync(lock.getName(), RScript.Mode.READ_WRITE, ISSUE_TOKEN,
                RScript.ReturnType.LONG, List.<Object>of(lock.getName(), counter), ownerField,
                FENCING_COUNTER_TTL.toMillis()).toCompletableFuture();
    }

    private static boolean isSubscriptionTimeout(Throwable failure) {
        return failure instanceof RedisTimeoutException && failure.getMessage() != null
                && failure.getMessage().startsWith("Unable to acquire subscription lock");
    }

    private static Throwable unwrap(Throwable failure) {
        return (failure instanceof CompletionException && failure.getCause() != null) ? failure.getCause() : failure;
    }

    /**
     * Stops the lease monitor, pending give-backs and the announcement (whose entry it deletes, best effort); the
     * client itself belongs to whoever created it.
     */
    @Override
    public void close() {
        monitor.close();
        handoffs.shutdown();
        permits.shutdown();
        giveBacks.shutdownNow();
        if (announced != null) {
            try {
                redisson.getKeys().deleteAsync(instanceKey(clientId)).toCompletableFuture().get(1, TimeUnit.SECONDS);
            }
            catch (Exception ex) {
                // Redis unreachable or the client shutting down: the entry expires by itself
            }
        }
    }

    // ---------------------------------------------------------------- LockInspector

    @Override
    public List<LockHolderInfo> holders(String key) {
        return inspect(key, false, null).holders();
    }

    @Override
    public List<LockHolderInfo> forceRelease(String key) {
        return inspect(key, true, null).holders();
    }

    @Override
    public ForceRelease forceRelease(String key, String expectedOwner) {
        return inspect(key, true, expectedOwner);
    }

    /**
     * Every hold of {@code key} (both hashes and the permits), read and evicted by one script: see {@link #INSPECT}.
     * With an expected owner only that owner's holds are taken, and the others stay as they were.
     */
    private ForceRelease inspect(String key, boolean evict, String expectedOwner) {
        checkKey(key);
        String readWrite = readWriteKey(key);
        List<Object> keys = List.of(key, RedissonObject.prefixName("redisson_lock__channel", key), readWrite,
                RedissonObject.prefixName("redisson_rwlock", readWrite), PermitLocks.permitsKey(key));
        // READ_UNLOCK wakes every waiter of the read/write hash, as Redisson's write-lock release does: readers may
        // all enter at once; UNLOCK follows it there, for a waiter between two attempts (see WAKE_IF_FREE)
        List<Object> reply = joinInspection(redisson.getScript(StringCodec.INSTANCE).<List<Object>>evalAsync(key,
                RScript.Mode.READ_WRITE, INSPECT, RScript.ReturnType.LIST, keys, evict ? "1" : "0",
                (expectedOwner != null) ? expectedOwner : "", publishCommand(),
                String.valueOf(org.redisson.pubsub.LockPubSub.UNLOCK_MESSAGE),
                String.valueOf(org.redisson.pubsub.LockPubSub.READ_UNLOCK_MESSAGE)).toCompletableFuture());
        if ("1".equals(reply.get(1).toString())) {
            // the FAIR queue's next waiter gets it now, not at its next poll
            join(handoffs.handOffIfFree(key));
        }
        List<LockHolderInfo> holders = new java.util.ArrayList<>();
        java.util.Map<String, LockInstance> instances = new java.util.HashMap<>();
        for (int i = 2; i + 2 < reply.size(); i += 3) {
            String mode = reply.get(i).toString();
            String owner = reply.get(i + 1).toString();
            long remaining = Long.parseLong(reply.get(i + 2).toString());
            int colon = owner.lastIndexOf(':');
            String instanceId = (colon > 0) ? owner.substring(0, colon) : null;
            LockInstance instance = (instanceId != null) ? instances.computeIfAbsent(instanceId, this::instance) : null;
            holders.add(new LockHolderInfo(key, owner, instanceId, instance, mode,
                    (remaining >= 0) ? Duration.ofMillis(remaining) : null));
        }
        return new ForceRelease("1".equals(reply.get(0).toString()), holders);
    }

    /** The script's answer; its refusal of a key that is not a lock becomes a {@link NotALockException}. */
    private static List<Object> joinInspection(CompletableFuture<List<Object>> reply) {
        try {
            return join(reply);
        }
        catch (RuntimeException ex) {
            for (Throwable cause = ex; cause != null; cause = cause.getCause()) {
                String message = cause.getMessage();
                int at = (message != null) ? message.indexOf(NOT_A_LOCK + " ") : -1;
                if (at >= 0) {
                    int end = message.indexOf('|', at);
                    throw new NotALockException("not a distlock lock: " + message.substring(
                            at + NOT_A_LOCK.length() + 1, (end > at) ? end : message.length()));
                }
            }
            throw ex;
        }
    }

    /**
     * After a WRITE lock's release: wakes the takers of the read/write hash {@code lock} names if it is free (see
     * {@link #WAKE_IF_FREE}). Never fails: without the message a taker still gets the lock at the end of its wait.
     */
    CompletableFuture<Void> wakeAfterWriteRelease(RLock lock) {
        String name = lock.getName();
        try {
            return redisson.getScript(LongCodec.INSTANCE).<Long>evalAsync(name, RScript.Mode.READ_WRITE, WAKE_IF_FREE,
                    RScript.ReturnType.LONG, List.<Object>of(name, RedissonObject.prefixName("redisson_rwlock", name)),
                    publishCommand(), String.valueOf(org.redisson.pubsub.LockPubSub.UNLOCK_MESSAGE))
                    .toCompletableFuture().handle((woken, failure) -> {
                        if (failure != null) {
                            logger.debug("Could not wake the takers of '" + name + "' after its release", failure);
                        }
                        return null;
                    });
        }
        catch (RuntimeException shutDown) {
            return CompletableFuture.completedFuture(null);
        }
    }

    /**
     * The command Redisson's own scripts wake waiters with: {@code spublish} where it subscribes with sharded pub/sub
     * (Redis 7 cluster), else {@code publish}. Internal API: {@code publish} when it can't be read.
     */
    String publishCommand() {
        try {
            if (redisson instanceof org.redisson.Redisson client) {
                return client.getCommandExecutor().getConnectionManager().getSubscribeService().getPublishCommand();
            }
        }
        catch (RuntimeException | LinkageError ex) {
            logger.debug("Could not read Redisson's publish command; using PUBLISH", ex);
        }
        return "publish";
    }

    /** The instance that announced itself under {@code clientId}, or {@code null}. */
    private LockInstance instance(String clientId) {
        String key = instanceKey(clientId);
        String entry = join(redisson.getScript(StringCodec.INSTANCE).<String>evalAsync(key, RScript.Mode.READ_WRITE,
                READ_INSTANCE, RScript.ReturnType.VALUE, List.<Object>of(key)).toCompletableFuture());
        return (entry != null) ? decodeInstance(entry) : null;
    }

    /** {@code application=..&host=..&pid=..}, each part URL-encoded: any name survives, and it stays readable. */
    static String encodeInstance(LockInstance instance) {
        return "application=" + encode(instance.application()) + "&host=" + encode(instance.host()) + "&pid="
                + instance.pid();
    }

    /** The instance of {@link #encodeInstance}, or {@code null} for anything else. */
    static LockInstance decodeInstance(String entry) {
        java.util.Map<String, String> parts = new java.util.HashMap<>();
        for (String part : entry.split("&")) {
            int equals = part.indexOf('=');
            if (equals > 0) {
                parts.put(part.substring(0, equals),
                        java.net.URLDecoder.decode(part.substring(equals + 1), java.nio.charset.StandardCharsets.UTF_8));
            }
        }
        if (parts.get("application") == null || parts.get("host") == null) {
            return null;
        }
        try {
            return new LockInstance(parts.get("application"), parts.get("host"),
                    Long.parseLong(parts.getOrDefault("pid", "-1")));
        }
        catch (NumberFormatException ex) {
            return new LockInstance(parts.get("application"), parts.get("host"), -1);
        }
    }

    private static String encode(String value) {
        return java.net.URLEncoder.encode(value, java.nio.charset.StandardCharsets.UTF_8);
    }

    /** The key of the hash naming the instance behind {@code clientId}. */
    static String instanceKey(String clientId) {
        return INSTANCE_KEY_PREFIX + "{" + clientId + "}";
    }

    /**
     * One command that reaches every master ({@code DBSIZE}), waited for at most {@code timeout}. At most one is in
     * flight: while Redis does not answer, later pings wait for the same command instead of piling up more (Redisson
     * keeps retrying one for its whole retry budget).
     */
    @Override
    public boolean ping(Duration timeout) {
        CompletableFuture<Long> ping;
        synchronized (this) {
            ping = pendingPing;
            if (ping == null || ping.isDone()) {
                try {
                    ping = redisson.getKeys().countAsync().toCompletableFuture();
                }
                catch (RuntimeException ex) {
                    // client shut down or not able to send at all
                    return false;
                }
                pendingPing = ping;
            }
        }
        try {
            ping.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            return true;
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return false;
        }
        catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException ex) {
            return false;
        }
    }

    /**
     * Stores {@code self} under this client's id now and every third of the watchdog timeout, with the watchdog
     * timeout as its time to live: it outlives this process by no longer than the process's own watchdog locks. A
     * write that fails (Redis unreachable) is made again at the next refresh.
     */
    @Override
    public synchronized void announce(LockInstance self) {
        announced = java.util.Objects.requireNonNull(self, "self");
        if (announcing == null) {
            long period = Math.max(1, watchdogMillis / 3);
            try {
                announcing = giveBacks.scheduleWithFixedDelay(this::writeAnnouncement, 0, period, TimeUnit.MILLISECONDS);
            }
            catch (java.util.concurrent.RejectedExecutionException closed) {
                // closed: nothing to announce any more
            }
        }
    }

    private void writeAnnouncement() {
        LockInstance self = announced;
        CompletableFuture<?> previous = pendingAnnouncement;
        if (previous != null && !previous.isDone()) {
            // Redis unreachable: the last write is still being retried; don't pile more commands onto the lock calls'
            return;
        }
        try {
            // not waited for: the executor also runs give-backs, which must not queue behind an unreachable Redis
            pendingAnnouncement = redisson.<String>getBucket(instanceKey(clientId), StringCodec.INSTANCE)
                    .setAsync(encodeInstance(self), Duration.ofMillis(watchdogMillis)).toCompletableFuture();
        }
        catch (RuntimeException ex) {
            // shutting down: nothing more to announce
        }
    }

    /** The client id that every owner field this provider writes starts with. */
    public String clientId() {
        return clientId;
    }

    static <T> T join(CompletableFuture<T> future) {
        try {
            return future.join();
        }
        catch (CompletionException ex) {
            throw (ex.getCause() instanceof RuntimeException cause) ? cause : ex;
        }
    }

    /** The FAIR locks' queue side (for tests). */
    HandoffLocks handoffs() {
        return handoffs;
    }

    /** Watchdog locks whose loss would be reported right now (for tests and diagnostics). */
    int watchedLocks() {
        return monitor.watchedCount();
    }

    /** The redisson client behind the locks. */
    public RedissonClient getRedisson() {
        return redisson;
    }

    /** One held lock; mutable only in what the lease monitor tracks and the latest token. */
    static final class RedissonLockHandle implements LockHandle {

        private final RedissonLockProvider provider;
        private final RLock lock;
        private final long owner;
        private final String ownerField;
        private final long leaseMillis;
        /** Redisson's {@code RLock} or read/write lock. */
        static final int RLOCK = 0;
        /** A {@code FAIR} lock of {@link HandoffLocks}: released and renewed by its scripts. */
        static final int HANDOFF = 1;
        /** A permit of {@link PermitLocks}. */
        static final int PERMIT = 2;
        private final int kind;
        final LeaseMonitor monitor;
        private static final int HELD = 0;
        private static final int RELEASING = 1;
        private static final int LOSS_REPORTED = 2;

        /**
         * Whoever moves the handle out of HELD first speaks: the loss report (LOSS_REPORTED) or the release (RELEASING),
         * so a loss found by the monitor and a release that finds the key gone never both report it.
         */
        private final java.util.concurrent.atomic.AtomicInteger state = new java.util.concurrent.atomic.AtomicInteger();
        private volatile long fencingToken = -1;
        /** The N a permit was taken under (part of its member in Redis). */
        volatile int permits = 1;
        /** A hand-off lock's waiter: told before the release that the caller is done (see HandoffLocks.Waiter#letGo). */
        volatile HandoffLocks.Waiter waiter;
        /** A hand-off lock's claim of its own lease, not yet sent: cancelled by the release. */
        volatile java.util.concurrent.ScheduledFuture<?> pendingClaim;
        private volatile Consumer<String> lostCallback;
        private volatile String lostReason;
        volatile long confirmedAt;
        volatile boolean checking;

        RedissonLockHandle(RedissonLockProvider provider, RLock lock, long owner, String ownerField, long leaseMillis,
                LeaseMonitor monitor, int kind) {
            this.kind = kind;
            this.provider = provider;
            this.lock = lock;
            this.owner = owner;
            this.ownerField = ownerField;
            this.leaseMillis = leaseMillis;
            this.monitor = monitor;
        }

        RLock lock() {
            return lock;
        }

        long owner() {
            return owner;
        }

        String ownerField() {
            return ownerField;
        }

        long leaseMillis() {
            return leaseMillis;
        }

        /**
         * Whether the lock is still this owner's, asked by the lease monitor. A hand-off lock has no Redisson watchdog:
         * the question renews it (Redisson renews its own locks every third of the watchdog timeout, as the monitor
         * asks).
         */
        CompletableFuture<Boolean> confirm() {
            if (kind == HANDOFF) {
                return provider.handoffs.renew(lock.getName(), ownerField, leaseMillis);
            }
            if (kind == PERMIT) {
                return provider.permits.renew(lock.getName(), permits, ownerField, leaseMillis);
            }
            return lock.isHeldByThreadAsync(owner).toCompletableFuture();
        }

        @Override
        public long fencingToken() {
            return fencingToken;
        }

        CompletableFuture<Long> issueToken() {
            return provider.issueToken(lock, ownerField).thenApply(token -> {
                if (token >= 0) {
                    fencingToken = token;
                }
                return token;
            });
        }

        @Override
        public long newFencingToken() {
            try {
                return issueToken().join();
            }
            catch (CompletionException ex) {
                throw (ex.getCause() instanceof RuntimeException cause) ? cause : ex;
            }
        }

        @Override
        public boolean stillHeld() {
            if (lostWhileHeld()) {
                return false;
            }
            try {
                if (kind == PERMIT) {
                    return provider.permits.renew(lock.getName(), permits, ownerField, 0).join();
                }
                return lock.isHeldByThreadAsync(owner).toCompletableFuture().join();
            }
            catch (CompletionException ex) {
                throw (ex.getCause() instanceof RuntimeException cause) ? cause : ex;
            }
        }

        @Override
        public CompletableFuture<Boolean> releaseAsync() {
            if (monitor != null) {
                monitor.unwatch(this);
            }
            state.compareAndSet(HELD, RELEASING);
            // The unlock script checks the owner: it never deletes another holder's lock, and reports a lock this owner
            // no longer holds as IllegalMonitorStateException. Being asynchronous, it is not cut short when the guarded
            // code left the thread interrupted.
            if (kind == PERMIT) {
                String key = lock.getName();
                int taken = permits;
                return provider.permits.release(key, taken, ownerField).handle((released, failure) -> {
                    if (failure == null) {
                        return released;
                    }
                    provider.giveBack(key, () -> provider.permits.release(key, taken, ownerField), leaseMillis);
                    Throwable cause = unwrap(failure);
                    throw (cause instanceof RuntimeException runtime) ? runtime : new CompletionException(cause);
                });
            }
            if (kind == HANDOFF) {
                CompletableFuture<Void> letGo = letGo();
                String key = lock.getName();
                CompletableFuture<Boolean> release = provider.handoffs.release(key, ownerField);
                if (letGo != null) {
                    release.whenComplete((released, failure) -> letGo.complete(null));
                }
                return release.handle((released, failure) -> {
                    if (failure == null) {
                        return released;
                    }
                    provider.giveBack(key, () -> provider.handoffs.release(key, ownerField), leaseMillis);
                    Throwable cause = unwrap(failure);
                    throw (cause instanceof RuntimeException runtime) ? runtime : new CompletionException(cause);
                });
            }
            CompletableFuture<Boolean> unlocked = lock.unlockAsync(owner).toCompletableFuture()
                    .handle((ignored, failure) -> {
                if (failure == null) {
                    return Boolean.TRUE;
                }
                Throwable cause = unwrap(failure);
                if (cause instanceof IllegalMonitorStateException) {
                    return Boolean.FALSE;
                }
                // the unlock may or may not have run: keep trying in the background, so that the lock does not stay
                // behind for its whole lease (it can't be re-entered meanwhile: the owner is this acquisition's alone)
                provider.giveBack(lock, owner, leaseMillis);
                throw (cause instanceof RuntimeException runtime) ? runtime : new CompletionException(cause);
            });
            if (!(lock instanceof org.redisson.RedissonWriteLock)) {
                return unlocked;
            }
            // answered once the wake-up was sent: whoever hears "released" and then takes the lock is not woken late
            return unlocked.thenCompose(released -> provider.wakeAfterWriteRelease(lock).thenApply(sent -> released));
        }

        /**
         * The caller is done with this hand-off lock, before its release is sent: the pending claim is cancelled and
         * the waiter told (so that its scripts still on their way are undone, see HandoffLocks.Waiter#lateScript).
         * Returns the future to complete once the release has answered; {@code null} for other kinds.
         */
        private CompletableFuture<Void> letGo() {
            java.util.concurrent.ScheduledFuture<?> claim = pendingClaim;
            if (claim != null) {
                claim.cancel(false);
            }
            HandoffLocks.Waiter told = waiter;
            return (told != null) ? told.letGo() : null;
        }

        /** A lock acquired but not handed out (lost before its token): nothing to release. */
        void notHandedOut() {
            CompletableFuture<Void> letGo = letGo();
            if (letGo != null) {
                letGo.complete(null);
            }
        }

        @Override
        public void whenLost(Consumer<String> callback) {
            lostCallback = callback;
            if (lostReason != null) {
                fireLost();
            }
        }

        @Override
        public boolean lostWhileHeld() {
            return state.get() == LOSS_REPORTED;
        }

        void lost(String reason) {
            lostReason = reason;
            if (lostCallback != null) {
                fireLost();
            }
        }

        /**
         * Either side may come second (loss found, callback registered): whichever does fires, once, and only while the
         * lock has not begun its release (which then reports a lost lock itself).
         */
        private void fireLost() {
            if (state.compareAndSet(HELD, LOSS_REPORTED)) {
                lostCallback.accept(lostReason);
            }
        }
    }
}

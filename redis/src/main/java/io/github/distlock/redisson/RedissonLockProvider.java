package io.github.distlock.redisson;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockHolderInfo;
import io.github.distlock.spi.LockInspector;
import io.github.distlock.spi.LockInstance;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

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
 * first checks that the lock is still this owner's, so tokens follow the order in which holders held the lock
 * ({@link FencingTokens}).
 *
 * <p>As a {@link LockInspector} it reads and deletes every hold of a key in one script (the hash of
 * {@code REENTRANT}/{@code FAIR}, the {@code distlock_rw:{<key>}} hash of {@code READ}/{@code WRITE} with each
 * reader's lease keys, and the permits), see {@link RedisLockInspector}; and it announces this
 * instance in a string {@code distlock:instance:{<client id>}} (one {@code SET ... PX}, no script: lock scripts are what
 * operators count) that expires after the watchdog timeout unless refreshed (every third of it) — the client id being
 * the first part of every owner field this client writes ({@link InstanceAnnouncer}). Its force release names each
 * evicted owner on one channel in the same script, and every provider reports the matching lock it holds lost at once,
 * watchdog or fixed lease ({@link Evictions}); a message that does not arrive leaves it to the lease check or the
 * release, as before.
 *
 * <p>Each request is served by one {@link RedisLockKind}, picked once: Redisson's own locks ({@link RLockKind}), the
 * hand-off lock ({@link HandoffKind}) or permits ({@link PermitKind}); the kind acquires, renews, checks and releases,
 * and this class checks the request, hands out the handle and watches its lease.
 */
public class RedissonLockProvider implements LockProvider, LockInspector, AutoCloseable {

    private static final Log logger = LogFactory.getLog(RedissonLockProvider.class);

    private final RedissonClient redisson;
    private final String clientId;
    private final long watchdogMillis;
    private final LeaseMonitor monitor;
    /** Set by {@link #close()}: no lock is handed out afterwards, none would be renewed. */
    private volatile boolean closed;
    /** Give-backs, deferred claims, polls and announcements: one thread, never waiting for Redis. */
    private final ScheduledExecutorService executor;
    private final FencingTokens tokens;
    private final InstanceAnnouncer announcer;
    private final HandoffLocks handoffs;
    private final PermitLocks permits;
    private final RedisLockInspector inspector;
    private final RLockKind rlocks;
    /** Redisson's command executor, for {@link OwnedRLock}s; {@code null} when it cannot be reached. */
    private final org.redisson.command.CommandAsyncExecutor commandExecutor;
    private final RLockLines lines;
    private final HandoffKind handoffKind;
    private final PermitKind permitKind;
    private final Evictions evictions;

    /**
     * @param redisson the client the locks live in; its {@code lockWatchdogTimeout} also paces the check that
     * reports a watchdog lock lost while it is held
     */
    public RedissonLockProvider(RedissonClient redisson) {
        this.redisson = redisson;
        this.clientId = redisson.getId();
        this.watchdogMillis = redisson.getConfig().getLockWatchdogTimeout();
        org.redisson.config.Config config = redisson.getConfig();
        this.monitor = new LeaseMonitor(watchdogMillis, clientId + ":",
                chunks -> renew(redisson, chunks, LeaseMonitor.answerTimeoutMillis(watchdogMillis)),
                config.isClusterConfig() ? LockKeys::slot : null);
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
        this.executor = executor;
        GiveBacks giveBacks = new GiveBacks(executor);
        UnlockMessages unlockMessages = new UnlockMessages(redisson);
        this.tokens = new FencingTokens(redisson);
        this.evictions = new Evictions(redisson, clientId, monitor, watchdogMillis);
        // now, not at the first lock: a force release soon after it would otherwise find nobody listening
        evictions.subscribe();
        this.announcer = new InstanceAnnouncer(redisson, clientId, watchdogMillis, executor);
        this.handoffs = new HandoffLocks(giveBacks, unlockMessages, redisson, clientId, watchdogMillis, executor);
        this.permits = new PermitLocks(giveBacks, redisson, executor);
        this.inspector = new RedisLockInspector(redisson, handoffs, unlockMessages, announcer, evictions);
        this.commandExecutor = commandExecutor(redisson);
        this.lines = new RLockLines(commandExecutor, executor, unlockMessages.publishCommand(),
                Math.max(1, watchdogMillis / 3));
        this.rlocks = new RLockKind(this, giveBacks, unlockMessages, lines);
        this.handoffKind = new HandoffKind(this, giveBacks, handoffs, executor);
        this.permitKind = new PermitKind(this, giveBacks, permits);
    }

    /**
     * Sends the lease monitor's renewal scripts in one batch: Redisson pipelines them, one write per master (the
     * scripts write: never to a replica). Not followed by a {@code WAIT} for the replicas, as acquisitions are: a
     * renewal lost in a failover leaves the previous one's time to live, and the next, a third of the watchdog
     * timeout later, extends it on the new master, or the lock is reported not confirmed.
     */
    private static List<CompletableFuture<List<Object>>> renew(RedissonClient redisson, List<LeaseMonitor.Chunk> chunks,
            long answerTimeoutMillis) {
        // Redisson gives the batch up within the monitor's own wait for it, and never sends it again: the monitor sends a
        // fresh renewal every period, and a batch retried behind it would pile up on a Redis that is slow already
        org.redisson.api.RBatch batch = redisson.createBatch(org.redisson.api.BatchOptions.defaults()
                .responseTimeout(answerTimeoutMillis, java.util.concurrent.TimeUnit.MILLISECONDS).retryAttempts(0));
        // the arguments are bytes already: nothing to encode per argument
        org.redisson.api.RScriptAsync scripts = batch.getScript(org.redisson.client.codec.ByteArrayCodec.INSTANCE);
        List<CompletableFuture<List<Object>>> answers = new java.util.ArrayList<>(chunks.size());
        for (LeaseMonitor.Chunk chunk : chunks) {
            answers.add(scripts.<List<Object>>evalAsync((String) chunk.keys().get(0),
                    org.redisson.api.RScript.Mode.READ_WRITE, LeaseMonitor.RENEW_SCRIPT,
                    org.redisson.api.RScript.ReturnType.LIST, chunk.keys(), chunk.args().toArray())
                    .toCompletableFuture());
        }
        // Each script's own answer, not the batch's: a batch fails as a whole when one of its scripts or one node
        // fails, though the others ran and renewed their locks; counting those unconfirmed would report healthy
        // locks lost and stop renewing them
        batch.executeAsync();
        return answers;
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

    /**
     * Redisson's (internal) command executor, which {@link OwnedRLock} is built on; {@code null}, and Redisson's own
     * wait for {@code REENTRANT}, when it cannot be reached.
     */
    private static org.redisson.command.CommandAsyncExecutor commandExecutor(RedissonClient redisson) {
        try {
            if (redisson instanceof org.redisson.Redisson client) {
                return client.getCommandExecutor();
            }
        }
        catch (RuntimeException | LinkageError ex) {
            logger.debug("Could not reach Redisson's command executor; REENTRANT waiters use Redisson's own wait", ex);
        }
        return null;
    }

    private RLock lock(LockType type, String key) {
        return switch (type) {
            // Redisson's RLock (the same object getLock makes), with a single try for the line to wait with
            case REENTRANT -> (commandExecutor != null) ? new OwnedRLock(commandExecutor, key) : redisson.getLock(key);
            // the hand-off lock's hash is the one RLock writes: this object names it and asks HEXISTS for stillHeld
            case FAIR -> redisson.getLock(key);
            // a key of their own: Redisson's read/write scripts only look at the hash's 'mode' field, which the
            // other types never write, so on one hash a reader could be granted beside a REENTRANT holder, and its
            // release could delete that holder's lock. Apart, the two families don't exclude each other (documented)
            // but can never corrupt each other.
            case READ -> redisson.getReadWriteLock(LockKeys.readWriteKey(key)).readLock();
            case WRITE -> redisson.getReadWriteLock(LockKeys.readWriteKey(key)).writeLock();
        };
    }

    /** The hash field Redisson writes for {@code owner}: the write half of a read/write lock adds a suffix. */
    String ownerField(LockType type, long owner) {
        return clientId + ":" + owner + ((type == LockType.WRITE) ? ":write" : "");
    }

    @Override
    public CompletableFuture<LockHandle> acquire(LockRequest request) {
        if (closed) {
            throw new IllegalStateException("The Redis lock provider is closed: lock '" + request.key()
                    + "' would not be renewed nor watched");
        }
        if (!supports(request.type(), request.fenced())) {
            throw new IllegalArgumentException("Redisson locks of type READ cannot be fenced: readers take no token");
        }
        LockKeys.checkKey(request.key());
        RLock lock = lock(request.type(), request.key());
        long owner = request.owner().id();
        long leaseMillis = request.watchdog() ? watchdogMillis : LockDurations.ceilMillis(request.leaseNanos());
        CompletableFuture<LockHandle> result = new CompletableFuture<>();
        kindOf(request).acquire(request, lock, owner, leaseMillis, result);
        return result;
    }

    /** The one kind that serves {@code request}: permits whatever the type, then FAIR, then Redisson's own. */
    private RedisLockKind kindOf(LockRequest request) {
        if (request.permits() > 1) {
            return permitKind;
        }
        if (request.type() == LockType.FAIR) {
            return handoffKind;
        }
        return rlocks;
    }

    /**
     * A handle of {@code kind}, watched by the lease monitor when the request renews by watchdog; {@code ownerField}
     * {@code null} when the kind did not need it: the handle builds it if it is ever asked for.
     */
    RedissonLockHandle handle(RedisLockKind kind, LockRequest request, RLock lock, long owner, String ownerField,
            long leaseMillis) {
        return new RedissonLockHandle(kind, tokens, request.key(), lock, owner, ownerField, this, request.type(),
                leaseMillis, request.watchdog() ? monitor : null, evictions);
    }

    /** Hands out {@code handle}, after issuing its token when the request is fenced. */
    void completeHandle(LockRequest request, RedissonLockHandle handle, CompletableFuture<LockHandle> result) {
        if (!request.fenced()) {
            complete(result, handle);
            return;
        }
        handle.issueToken().whenComplete((token, tokenFailure) -> {
            if (tokenFailure != null) {
                handle.releaseAsync();
                result.completeExceptionally(Futures.unwrap(tokenFailure));
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

    /**
     * Hands out {@code handle}, watched when it renews by watchdog and told when an operator force-releases it; one the
     * caller stopped waiting for is released.
     */
    void complete(CompletableFuture<LockHandle> result, RedissonLockHandle handle) {
        if (handle.monitor != null && !monitor.watch(handle)) {
            // granted as the provider closed: nothing would renew it, so nobody may hold it
            handle.releaseAsync();
            result.completeExceptionally(new IllegalStateException("The Redis lock provider closed while lock '"
                    + handle.key() + "' was being acquired: it was given back"));
            return;
        }
        evictions.held(handle.key(), handle);
        if (!result.complete(handle)) {
            handle.releaseAsync();
        }
    }

    /**
     * Closes {@code key} for {@code FAIR} locks and permits ({@code permits > 1}): see {@link LockProvider#closeKey}.
     * Both read one mark in Redis, so every instance sees it. The count is exact for {@code FAIR} waiters (they queue in
     * Redis) and counts this instance's permit waiters only: permit waiters poll, and the ones of other instances are
     * turned away by their next attempt (within about 75 ms).
     */
    @Override
    public long closeKey(String key, String reason) {
        LockKeys.checkKey(key);
        java.util.Objects.requireNonNull(reason, "closeKey: reason");
        long fair = handoffs.close(key, reason);
        return fair + permits.closed(key, reason);
    }

    @Override
    public void reopenKey(String key) {
        LockKeys.checkKey(key);
        handoffs.reopen(key);
    }

    /**
     * Stops the lease monitor, pending give-backs and the announcement (whose entry it deletes, best effort); the
     * client itself belongs to whoever created it.
     */
    @Override
    public void close() {
        closed = true;
        evictions.close();
        monitor.close();
        handoffs.shutdown();
        lines.shutdown();
        permits.shutdown();
        executor.shutdownNow();
        announcer.close();
    }

    @Override
    public List<LockHolderInfo> holders(String key) {
        return inspector.holders(key);
    }

    @Override
    public List<LockHolderInfo> forceRelease(String key) {
        return inspector.forceRelease(key);
    }

    @Override
    public ForceRelease forceRelease(String key, String expectedOwner) {
        return inspector.forceRelease(key, expectedOwner);
    }

    /** {@code <client id>:<owner id>}: the owner field this provider writes, as {@link #holders} lists it. */
    @Override
    public String ownerName(long ownerId) {
        return ownerField(LockType.REENTRANT, ownerId);
    }

    /** See {@link RedisLockInspector#ping}. */
    @Override
    public boolean ping(Duration timeout) {
        return inspector.ping(timeout);
    }

    /**
     * Stores {@code self} under this client's id now and every third of the watchdog timeout, with the watchdog
     * timeout as its time to live: it outlives this process by no longer than the process's own watchdog locks. A
     * write that fails (Redis unreachable) is made again at the next refresh.
     */
    @Override
    public void announce(LockInstance self) {
        inspector.announce(self);
    }

    /** The client id that every owner field this provider writes starts with. */
    public String clientId() {
        return clientId;
    }

    /** The FAIR locks' queue side (for tests). */
    HandoffLocks handoffs() {
        return handoffs;
    }

    /** Where REENTRANT callers wait (for tests). */
    RLockLines rlockLines() {
        return lines;
    }

    /** Where force releases are told (for tests). */
    Evictions evictions() {
        return evictions;
    }

    /** Watchdog locks whose loss would be reported right now (for tests and diagnostics). */
    int watchedLocks() {
        return monitor.watchedCount();
    }

    /** The redisson client behind the locks. */
    public RedissonClient getRedisson() {
        return redisson;
    }
}

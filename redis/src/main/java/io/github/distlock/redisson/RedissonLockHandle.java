package io.github.distlock.redisson;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Consumer;

import io.github.distlock.spi.LockHandle;
import org.redisson.api.RLock;

/** One held lock; mutable only in what the lease monitor tracks and the latest token. */
final class RedissonLockHandle implements LockHandle {

    private final FencingTokens tokens;
    /** The key as the caller named it: the read/write lock's hash has another name. */
    private final String key;
    private final RLock lock;
    private final long owner;
    /**
     * The hash field this owner writes; {@code null} until first asked for when the kind did not need it to acquire
     * ({@code REENTRANT}, {@code READ}, {@code WRITE}): a fixed unfenced lock never asks, and building it (client id,
     * owner id) on the event loop would delay the caller's wake-up. Any thread may build it: the value is always equal.
     */
    private volatile String ownerField;
    /** Builds {@link #ownerField} when it is first asked for. */
    private final RedissonLockProvider provider;
    private final io.github.distlock.LockType type;
    private final long leaseMillis;
    /** How this lock is released, renewed and checked: the kind it was acquired as. */
    private final RedisLockKind kind;
    final LeaseMonitor monitor;
    /** Where a force release on any instance finds this lock to report it lost; forgotten on release or loss. */
    private final Evictions evictions;
    /** When it was handed out ({@link System#nanoTime()}): a fixed lease never released is forgotten after it. */
    final long heldSince = System.nanoTime();
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
    /** A hand-off lock's waiter: told before the release that the caller is done (see HandoffWaiter#letGo). */
    volatile HandoffWaiter waiter;
    /** A hand-off lock's claim of its own lease, not yet sent: cancelled by the release. */
    volatile java.util.concurrent.ScheduledFuture<?> pendingClaim;
    private volatile Consumer<String> lostCallback;
    private volatile String lostReason;
    volatile long confirmedAt;
    volatile boolean checking;
    /** The renewal chunks it goes in, set when first watched; {@code null} for a lock the monitor asks alone. */
    volatile LeaseMonitor.Group renewalGroup;

    /** {@code ownerField} may be {@code null}: it is then built from the provider when first asked for. */
    RedissonLockHandle(RedisLockKind kind, FencingTokens tokens, String key, RLock lock, long owner, String ownerField,
            RedissonLockProvider provider, io.github.distlock.LockType type, long leaseMillis, LeaseMonitor monitor,
            Evictions evictions) {
        this.kind = kind;
        this.provider = provider;
        this.type = type;
        this.tokens = tokens;
        this.key = key;
        this.evictions = evictions;
        this.lock = lock;
        this.owner = owner;
        this.ownerField = ownerField;
        this.leaseMillis = leaseMillis;
        this.monitor = monitor;
    }

    String key() {
        return key;
    }

    RLock lock() {
        return lock;
    }

    long owner() {
        return owner;
    }

    String ownerField() {
        String field = ownerField;
        if (field == null) {
            field = provider.ownerField(type, owner);
            ownerField = field;
        }
        return field;
    }

    long leaseMillis() {
        return leaseMillis;
    }

    /**
     * Whether the lock is still this owner's, asked by the lease monitor of the kinds it does not renew in chunks
     * (FAIR, permits): the question renews it, every third of the watchdog timeout.
     */
    CompletableFuture<Boolean> confirm() {
        return kind.confirm(this);
    }

    /** See {@link RedisLockKind#batchedRenewalMillis}. */
    long batchedRenewalMillis() {
        return kind.batchedRenewalMillis(this);
    }

    @Override
    public long fencingToken() {
        return fencingToken;
    }

    CompletableFuture<Long> issueToken() {
        return tokens.issue(lock, ownerField()).thenApply(token -> {
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
            return kind.stillHeld(this).join();
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
        try {
            return kind.release(this);
        }
        finally {
            // after the release is sent, while it travels: the caller waits for its answer, not for this. An eviction
            // message read meanwhile reports nothing: the handle left HELD above, and the release reports what it finds
            evictions.forget(key, this);
        }
    }

    /**
     * The caller is done with this hand-off lock, before its release is sent: the pending claim is cancelled and
     * the waiter told (so that its scripts still on their way are undone, see HandoffWaiter#lateScript).
     * Returns the future to complete once the release has answered; {@code null} for other kinds.
     */
    CompletableFuture<Void> letGo() {
        java.util.concurrent.ScheduledFuture<?> claim = pendingClaim;
        if (claim != null) {
            claim.cancel(false);
        }
        HandoffWaiter told = waiter;
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
        evictions.forget(key, this);
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

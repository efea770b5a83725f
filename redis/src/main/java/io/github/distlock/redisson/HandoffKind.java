package io.github.distlock.redisson;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockRequest;
import org.redisson.api.RLock;

/**
 * {@code FAIR}: the hand-off lock of {@link HandoffLocks}, on the very hash Redisson's {@link RLock} writes (so this
 * object names it and asks {@code HEXISTS} for {@code stillHeld}), taken, renewed and released by our own scripts.
 */
final class HandoffKind implements RedisLockKind {

    private final RedissonLockProvider provider;
    private final GiveBacks giveBacks;
    private final HandoffLocks handoffs;
    /** Runs the deferred claims; shared with the give-backs. */
    private final ScheduledExecutorService giveBacksExecutor;

    HandoffKind(RedissonLockProvider provider, GiveBacks giveBacks, HandoffLocks handoffs,
            ScheduledExecutorService executor) {
        this.provider = provider;
        this.giveBacks = giveBacks;
        this.handoffs = handoffs;
        this.giveBacksExecutor = executor;
    }

    /**
     * A {@code FAIR} lock: the hand-off lock of {@link HandoffLocks}. A caller that stops waiting (the template cancels
     * {@code result}) leaves the queue, or passes on a lock granted to it meanwhile.
     */
    @Override
    public void acquire(LockRequest request, RLock lock, long owner, long leaseMillis,
            CompletableFuture<LockHandle> result) {
        String field = provider.ownerField(LockType.FAIR, owner);
        HandoffWaiter waiter = handoffs.acquire(request.key(), owner, field, request.waitNanos(), leaseMillis);
        CompletableFuture<HandoffLocks.Granted> granted = waiter.result;
        result.whenComplete((ignored, failure) -> {
            if (result.isCancelled()) {
                granted.cancel(false);
            }
        });
        granted.whenComplete((grant, failure) -> {
            if (failure != null) {
                if (!(failure instanceof java.util.concurrent.CancellationException)) {
                    result.completeExceptionally(Futures.unwrap(failure));
                }
                return;
            }
            if (grant == null) {
                result.complete(null);
                return;
            }
            try {
                RedissonLockHandle handle = provider.handle(this, request, lock, owner, field, leaseMillis);
                handle.waiter = waiter;
                if (grant.claimNeeded()) {
                    deferClaim(handle, grant.claimBy());
                }
                provider.completeHandle(request, handle, result);
            }
            catch (Throwable unexpected) {
                waiter.letGo().complete(null);
                giveBacks.giveBack(request.key(), () -> handoffs.release(request.key(), field), leaseMillis);
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
            handle.pendingClaim = giveBacksExecutor.schedule(() -> claim(handle, claimBy), delay, TimeUnit.NANOSECONDS);
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
                giveBacksExecutor.schedule(() -> claim(handle, claimBy), Math.min(left, TimeUnit.MILLISECONDS.toNanos(100)),
                        TimeUnit.NANOSECONDS);
            }
            catch (RuntimeException rejected) {
                // closed
            }
        });
    }

    @Override
    public CompletableFuture<Boolean> confirm(RedissonLockHandle handle) {
        return handoffs.renew(handle.lock().getName(), handle.ownerField(), handle.leaseMillis());
    }

    @Override
    public CompletableFuture<Boolean> stillHeld(RedissonLockHandle handle) {
        return handle.lock().isHeldByThreadAsync(handle.owner()).toCompletableFuture();
    }

    @Override
    public CompletableFuture<Boolean> release(RedissonLockHandle handle) {
        String ownerField = handle.ownerField();
        long leaseMillis = handle.leaseMillis();
        CompletableFuture<Void> letGo = handle.letGo();
        String key = handle.lock().getName();
        CompletableFuture<Boolean> release = handoffs.release(key, ownerField);
        if (letGo != null) {
            release.whenComplete((released, failure) -> letGo.complete(null));
        }
        return release.handle((released, failure) -> {
            if (failure == null) {
                return released;
            }
            giveBacks.giveBack(key, () -> handoffs.release(key, ownerField), leaseMillis);
            Throwable cause = Futures.unwrap(failure);
            throw (cause instanceof RuntimeException runtime) ? runtime : new CompletionException(cause);
        });
    }
}

package io.github.distlock.redisson;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockRequest;
import org.redisson.api.RLock;
import org.redisson.client.RedisTimeoutException;

/**
 * {@code REENTRANT}, {@code READ} and {@code WRITE}: Redisson's own {@link RLock} and the two halves of its
 * {@code RReadWriteLock}, taken and released by Redisson's scripts. The three differ only in the Redisson object
 * ({@link RedissonLockProvider} picks it) and in the wake-up a WRITE release adds. A watchdog lock is taken with the
 * watchdog timeout as an explicit lease, for which Redisson schedules no renewal of its own: the lease monitor renews
 * it, in chunks, with the script that also tells which were lost ({@link LeaseMonitor}), a reader's timeout key with
 * it.
 */
final class RLockKind implements RedisLockKind {

    private final RedissonLockProvider provider;
    private final GiveBacks giveBacks;
    private final UnlockMessages unlockMessages;
    /** Where {@code REENTRANT} callers wait ({@link OwnedRLock}s only). */
    private final RLockLines lines;

    RLockKind(RedissonLockProvider provider, GiveBacks giveBacks, UnlockMessages unlockMessages, RLockLines lines) {
        this.provider = provider;
        this.giveBacks = giveBacks;
        this.unlockMessages = unlockMessages;
        this.lines = lines;
    }

    @Override
    public void acquire(LockRequest request, RLock lock, long owner, long leaseMillis,
            CompletableFuture<LockHandle> result) {
        if (lock instanceof OwnedRLock owned) {
            acquireInLine(request, owned, owner, leaseMillis, result);
            return;
        }
        // Milliseconds, rounded up, whatever the caller's unit: for watchdog leases Redisson hands the wait to its
        // scripts as milliseconds without converting it (a fair lock's queue timeout came out 10^6 times too long)
        long waitMillis = LockDurations.ceilMillis(request.waitNanos());
        // a watchdog lease (renewed by the monitor) is a fixed lease to Redisson, which then does not renew it as well
        lock.tryLockAsync(waitMillis, leaseMillis, TimeUnit.MILLISECONDS, owner).whenComplete((acquired, failure) -> {
            try {
                completeAcquisition(request, lock, owner, leaseMillis, acquired, failure, result);
            }
            catch (Throwable unexpected) {
                // never leave the caller waiting forever with a lock it can't know it holds
                giveBack(lock, owner, leaseMillis);
                result.completeExceptionally(unexpected);
            }
        });
    }

    /**
     * {@code REENTRANT}: one try when the caller does not wait, else a place in the key's line ({@link RLockLines}),
     * whose first waiter tries once per unlock message.
     */
    private void acquireInLine(LockRequest request, OwnedRLock lock, long owner, long leaseMillis,
            CompletableFuture<LockHandle> result) {
        RLockLines.Outcome outcome = (acquired, failure) -> {
            try {
                completeAcquisition(request, lock, owner, leaseMillis, acquired, failure, result);
            }
            catch (Throwable unexpected) {
                // never leave the caller waiting forever with a lock it can't know it holds
                giveBack(lock, owner, leaseMillis);
                result.completeExceptionally(unexpected);
            }
        };
        if (request.waitNanos() > 0) {
            lines.acquire(lock, owner, leaseMillis, request.waitNanos(), result, outcome);
            return;
        }
        RLockLines.tryOnce(lock, leaseMillis, owner).whenComplete((ttl, failure) ->
                outcome.settle((failure == null) ? Boolean.valueOf(ttl == null) : null, failure));
    }

    private void completeAcquisition(LockRequest request, RLock lock, long owner, long leaseMillis, Boolean acquired,
            Throwable failure, CompletableFuture<LockHandle> result) {
        if (failure != null) {
            Throwable cause = Futures.unwrap(failure);
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
        // no owner field: this runs on the event loop before the caller is woken, and only a watchdog, a fencing token
        // or an inspection asks for it (the handle builds it then)
        RedissonLockHandle handle = provider.handle(this, request, lock, owner, null, leaseMillis);
        provider.completeHandle(request, handle, result);
    }

    /** Not called for this kind: the lease monitor confirms and renews it in chunks ({@link #batchedRenewalMillis}). */
    @Override
    public CompletableFuture<Boolean> confirm(RedissonLockHandle handle) {
        return handle.lock().isHeldByThreadAsync(handle.owner()).toCompletableFuture();
    }

    /** The watchdog timeout: the monitor renews every watchdog lock of this kind. */
    @Override
    public long batchedRenewalMillis(RedissonLockHandle handle) {
        return handle.leaseMillis();
    }

    @Override
    public CompletableFuture<Boolean> stillHeld(RedissonLockHandle handle) {
        return handle.lock().isHeldByThreadAsync(handle.owner()).toCompletableFuture();
    }

    @Override
    public CompletableFuture<Boolean> release(RedissonLockHandle handle) {
        RLock lock = handle.lock();
        long owner = handle.owner();
        long leaseMillis = handle.leaseMillis();
        CompletableFuture<Boolean> unlocked = lock.unlockAsync(owner).toCompletableFuture()
                .handle((ignored, failure) -> {
            if (failure == null) {
                return Boolean.TRUE;
            }
            Throwable cause = Futures.unwrap(failure);
            if (cause instanceof IllegalMonitorStateException) {
                return Boolean.FALSE;
            }
            // the unlock may or may not have run: keep trying in the background, so that the lock does not stay
            // behind for its whole lease (it can't be re-entered meanwhile: the owner is this acquisition's alone)
            giveBack(lock, owner, leaseMillis);
            throw (cause instanceof RuntimeException runtime) ? runtime : new CompletionException(cause);
        });
        if (!(lock instanceof org.redisson.RedissonWriteLock)) {
            return unlocked;
        }
        // answered once the wake-up was sent: whoever hears "released" and then takes the lock is not woken late
        return unlocked.thenCompose(released -> unlockMessages.wakeAfterWriteRelease(lock).thenApply(sent -> released));
    }

    /**
     * Releases what {@code owner} may hold of {@code lock}, again until it is released or Redis has answered "not held"
     * twice (the second answer was asked for after the first arrived, so a script that was still on its way when the
     * first was sent has run by then), and at most for the lock's lease, after which it has expired anyway.
     */
    private void giveBack(RLock lock, long owner, long leaseMillis) {
        giveBacks.giveBack(lock.getName(), () -> lock.unlockAsync(owner).toCompletableFuture().handle((ignored, failure) -> {
            if (failure == null) {
                if (lock instanceof org.redisson.RedissonWriteLock) {
                    unlockMessages.wakeAfterWriteRelease(lock);
                }
                return Boolean.TRUE;
            }
            if (Futures.unwrap(failure) instanceof IllegalMonitorStateException) {
                return Boolean.FALSE;
            }
            throw (failure instanceof CompletionException completion) ? completion : new CompletionException(failure);
        }), leaseMillis);
    }

    private static boolean isSubscriptionTimeout(Throwable failure) {
        return failure instanceof RedisTimeoutException && failure.getMessage() != null
                && failure.getMessage().startsWith("Unable to acquire subscription lock");
    }
}

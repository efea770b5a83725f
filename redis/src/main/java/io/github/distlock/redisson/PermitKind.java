package io.github.distlock.redisson;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import io.github.distlock.LockKeyClosedException;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockRequest;
import org.redisson.api.RLock;

/** Permits ({@code permits > 1}): one of N holders of a key, see {@link PermitLocks}. */
final class PermitKind implements RedisLockKind {

    private final RedissonLockProvider provider;
    private final GiveBacks giveBacks;
    private final PermitLocks permits;

    PermitKind(RedissonLockProvider provider, GiveBacks giveBacks, PermitLocks permits) {
        this.provider = provider;
        this.giveBacks = giveBacks;
        this.permits = permits;
    }

    /** One of {@code request.permits()} permits of the key. */
    @Override
    public void acquire(LockRequest request, RLock lock, long owner, long leaseMillis,
            CompletableFuture<LockHandle> result) {
        if (request.type() != LockType.REENTRANT || request.fenced()) {
            throw new IllegalArgumentException("permits = " + request.permits() + " cannot be combined with "
                    + (request.fenced() ? "fencing" : "type " + request.type()) + ": permits are REENTRANT and unfenced");
        }
        String key = request.key();
        String field = provider.ownerField(LockType.REENTRANT, owner);
        CompletableFuture<Boolean> taken = permits.acquire(key, field, request.permits(), request.waitNanos(), leaseMillis);
        result.whenComplete((ignored, failure) -> {
            if (result.isCancelled()) {
                taken.cancel(false);
            }
        });
        taken.whenComplete((acquired, failure) -> {
            if (failure != null) {
                if (failure instanceof LockKeyClosedException closed) {
                    // told by a script that took nothing, or by the close itself (an attempt that took a permit
                    // meanwhile gives it back on its own)
                    result.completeExceptionally(closed);
                }
                else if (!(failure instanceof java.util.concurrent.CancellationException)) {
                    // the script may have run after the client gave up on its reply
                    giveBacks.giveBack(key, () -> permits.release(key, request.permits(), field), leaseMillis);
                    result.completeExceptionally(Futures.unwrap(failure));
                }
                return;
            }
            if (!acquired) {
                result.complete(null);
                return;
            }
            RedissonLockHandle handle = provider.handle(this, request, lock, owner, field, leaseMillis);
            handle.permits = request.permits();
            provider.complete(result, handle);
        });
    }

    @Override
    public CompletableFuture<Boolean> confirm(RedissonLockHandle handle) {
        return permits.renew(handle.lock().getName(), handle.permits, handle.ownerField(), handle.leaseMillis());
    }

    @Override
    public CompletableFuture<Boolean> stillHeld(RedissonLockHandle handle) {
        return permits.renew(handle.lock().getName(), handle.permits, handle.ownerField(), 0);
    }

    @Override
    public CompletableFuture<Boolean> release(RedissonLockHandle handle) {
        String ownerField = handle.ownerField();
        long leaseMillis = handle.leaseMillis();
        String key = handle.lock().getName();
        int taken = handle.permits;
        return permits.release(key, taken, ownerField).handle((released, failure) -> {
            if (failure == null) {
                return released;
            }
            giveBacks.giveBack(key, () -> permits.release(key, taken, ownerField), leaseMillis);
            Throwable cause = Futures.unwrap(failure);
            throw (cause instanceof RuntimeException runtime) ? runtime : new CompletionException(cause);
        });
    }
}

package io.github.distlock.redisson;

import java.util.concurrent.CompletableFuture;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockRequest;
import org.redisson.api.RLock;

/**
 * How one kind of Redis lock is taken, kept and given back: the seam between {@link RedissonLockProvider}, which
 * checks a request, picks its kind once and hands out the handle, and the Redis objects and scripts of each kind.
 * Inspection and forced release are not per kind: one script reads and evicts every kind of hold of a key at once
 * ({@link RedisLockInspector}), so that what an operator sees is one moment of the key.
 */
sealed interface RedisLockKind permits RLockKind, HandoffKind, PermitKind {

    /**
     * Starts acquiring {@code request}: completes {@code result} with the handle, with {@code null} when the lock was
     * not free within the wait, or exceptionally when Redis failed; a caller that cancels {@code result} stops
     * waiting. Throws {@link IllegalArgumentException} at once for a request this kind cannot serve.
     *
     * @param lock the Redisson object naming the lock ({@link RedissonLockProvider} picks it by type)
     * @param leaseMillis the lease the holder keeps: the watchdog timeout for a watchdog lock
     */
    void acquire(LockRequest request, RLock lock, long owner, long leaseMillis, CompletableFuture<LockHandle> result);

    /**
     * Whether the lock is still the handle's, asked by the lease monitor every third of the watchdog timeout for the
     * kinds it does not renew in chunks ({@link #batchedRenewalMillis} {@code -1}), and renewing it.
     */
    CompletableFuture<Boolean> confirm(RedissonLockHandle handle);

    /**
     * How the lease monitor keeps a watchdog lock of this kind: {@code -1}, by {@link #confirm} one lock at a time;
     * otherwise in chunks with the monitor's renewal script, which extends the key by the answer in milliseconds
     * ({@code 0}: only asks) while the handle's owner field is in it.
     */
    default long batchedRenewalMillis(RedissonLockHandle handle) {
        return -1;
    }

    /** Whether the lock is still the handle's, without renewing it. */
    CompletableFuture<Boolean> stillHeld(RedissonLockHandle handle);

    /**
     * Releases the handle's lock: {@code true} released, {@code false} no longer held. After a failure the release may
     * or may not have run, and it is tried again in the background until Redis answers.
     */
    CompletableFuture<Boolean> release(RedissonLockHandle handle);
}

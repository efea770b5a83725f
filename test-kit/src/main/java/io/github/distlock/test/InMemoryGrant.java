package io.github.distlock.test;

import java.util.List;
import java.util.concurrent.CompletableFuture;

import io.github.distlock.spi.LockHandle;

/**
 * A grant to a queued waiter, run from {@code afterwards}: hands {@code hold} over on a callback thread, and
 * {@link #delivered} completes once it has (the waiter's future completed, and with it the continuations that run
 * where it is completed).
 *
 * <p>Why another thread: another caller's release (or cancellation, or expiry) made the grant, and completed on
 * that caller's thread, the waiter's continuations would run inside that caller's lock calls and re-enter its
 * other locks through {@link io.github.distlock.LockContext} (which re-enters per thread) while another owner holds
 * them. Real backends complete on their own threads; so does this one. Only a request granted at once, in
 * {@link InMemoryLockProvider#acquire}, is completed on its own caller's thread.
 *
 * <p>Why {@code delivered}: a release (and the other calls that grant) still answers only once its grants have been
 * handed over, as when it ran them itself, so a test that has released sees the next holder told. The price, as
 * before: a waiter's continuation that blocks holds up the release that granted it. Keep continuations short and
 * non-blocking, as {@link io.github.distlock.LockTemplate#acquireAsync} asks.
 */
final class InMemoryGrant implements Runnable {

    private final CompletableFuture<LockHandle> future;
    private final InMemoryHold hold;
    final CompletableFuture<Void> delivered = new CompletableFuture<>();

    InMemoryGrant(CompletableFuture<LockHandle> future, InMemoryHold hold) {
        this.future = future;
        this.hold = hold;
    }

    @Override
    public void run() {
        try {
            hold.table.callbacks.execute(this::deliver);
        }
        catch (java.util.concurrent.RejectedExecutionException closed) {
            // closed meanwhile (its waiters were failed then): answer here rather than leave the hold to nobody
            deliver();
        }
    }

    private void deliver() {
        try {
            complete(future, hold);
        }
        finally {
            delivered.complete(null);
        }
    }

    /**
     * Runs what was decided under the mutex, outside it; the future completes when every {@link InMemoryGrant} among
     * it has been handed over.
     */
    static CompletableFuture<Void> runAfterwards(List<Runnable> afterwards) {
        afterwards.forEach(Runnable::run);
        CompletableFuture<?>[] grants = afterwards.stream().filter(InMemoryGrant.class::isInstance)
                .map(grant -> ((InMemoryGrant) grant).delivered).toArray(CompletableFuture<?>[]::new);
        return (grants.length == 0) ? CompletableFuture.completedFuture(null) : CompletableFuture.allOf(grants);
    }

    /** Hands {@code hold} to its caller, or gives it back when the caller stopped waiting (cancelled) meanwhile. */
    static void complete(CompletableFuture<LockHandle> future, InMemoryHold hold) {
        if (!future.complete(hold.handle)) {
            hold.handle.releaseAsync();
        }
    }
}

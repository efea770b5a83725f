package io.github.distlock.observation;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;

/**
 * A backend that grants every lock at once and counts the locks held, for tests of what the template does around the
 * lock (observation handlers that fail), not of locking itself.
 */
final class CountingLockProvider implements LockProvider {

    final AtomicInteger held = new AtomicInteger();

    @Override
    public CompletableFuture<LockHandle> acquire(LockRequest request) {
        held.incrementAndGet();
        return CompletableFuture.completedFuture(new LockHandle() {
            @Override
            public long fencingToken() {
                return -1;
            }

            @Override
            public CompletableFuture<Boolean> releaseAsync() {
                held.decrementAndGet();
                return CompletableFuture.completedFuture(true);
            }
        });
    }

    @Override
    public boolean supports(LockType type, boolean fenced) {
        return true;
    }
}

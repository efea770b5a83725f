package io.github.distlock.test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockRequest;

/** A queued acquisition of an {@link InMemoryLockProvider}; its timeout is set right after it is queued, under the mutex. */
final class InMemoryWaiter {

    final LockRequest request;
    final CompletableFuture<LockHandle> future;
    ScheduledFuture<?> timeout;

    InMemoryWaiter(LockRequest request, CompletableFuture<LockHandle> future) {
        this.request = request;
        this.future = future;
    }
}

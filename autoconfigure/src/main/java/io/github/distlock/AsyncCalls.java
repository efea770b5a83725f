package io.github.distlock;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

import io.github.distlock.observation.LockCallOutcome;
import io.github.distlock.spi.LockProvider;

/**
 * The asynchronous calls of {@link DefaultLockTemplate}: {@code executeAsync}, whose keys are held until the action's
 * own stage completes, and {@code acquireAsync}, whose call is handed back as the {@link HeldLock} the caller
 * releases. Neither re-enters: their locks outlive the calling thread's call.
 */
final class AsyncCalls {

    private final LockProvider provider;
    private final LockAcquirer acquirer;
    private final LockReleaser releaser;

    AsyncCalls(LockProvider provider, LockAcquirer acquirer, LockReleaser releaser) {
        this.provider = provider;
        this.acquirer = acquirer;
        this.releaser = releaser;
    }

    /** {@link LockTemplate#executeAsync} on checked full keys and supported options. */
    <T> CompletableFuture<T> executeAsync(String[] fullKeys, LockOptions options,
            Supplier<? extends CompletionStage<T>> action) {
        // before taking anything: on a key this thread holds, the blocking take below would wait for this thread
        NestedLockException nested = LockContext.refuseAsync(provider, fullKeys, options.type(), options.permits());
        if (nested != null) {
            return CompletableFuture.failedFuture(nested);
        }
        ActiveCall taken;
        try {
            taken = acquirer.takeBlocking(fullKeys, options);
        }
        catch (RuntimeException ex) {
            return CompletableFuture.failedFuture(ex);
        }
        if (taken.failedKey() != null) {
            return CompletableFuture.failedFuture(
                    new LockAcquisitionException(taken.failedKey(), Duration.ofNanos(taken.waitNanos), null));
        }
        CompletableFuture<T> result = new CompletableFuture<>();
        CompletionStage<T> stage;
        acquirer.watch(taken);
        LockContext.Frame[] frames = new LockContext.Frame[fullKeys.length];
        try {
            // fencingToken() works in the action's synchronous part; nothing re-enters through these frames later
            for (int i = 0; i < fullKeys.length; i++) {
                frames[i] = LockContext.enter(provider, taken, i);
            }
            stage = Objects.requireNonNull(action.get(), "the action returned no stage");
        }
        catch (Throwable ex) {
            releaser.release(taken).whenComplete((ignored, never) -> result.completeExceptionally(ex));
            return result;
        }
        finally {
            for (int i = frames.length - 1; i >= 0; i--) {
                if (frames[i] != null) {
                    LockContext.exit(frames[i]);
                }
            }
        }
        // Released when the action's own stage completes, and only then: cancelling the returned future does not
        // stop work already running (CompletableFuture.cancel never does), so it must not end the hold either
        java.util.concurrent.atomic.AtomicReference<LockLeaseLostException> stopped = new java.util.concurrent.atomic.AtomicReference<>();
        if (options.leaseLostPolicy() == LeaseLostPolicy.CANCEL) {
            taken.onLeaseLost(loss -> {
                if (stage instanceof java.util.concurrent.Future<?> done && done.isDone()) {
                    // the work ended before the loss: nothing to stop, and its own outcome stands
                    return;
                }
                stopped.set(loss);
                if (stage instanceof java.util.concurrent.Future<?> future) {
                    // CompletableFuture.cancel completes it at once: the release and the caller's failure follow
                    future.cancel(true);
                }
                else {
                    // a stage that cannot be cancelled: the caller learns at once, the lock is released with the stage
                    result.completeExceptionally(new LockLeaseLostException(loss.getKey(), loss.getReason(), null));
                }
            });
        }
        stage.whenComplete((value, failure) -> releaser.release(taken).whenComplete((ignored, never) -> {
            taken.clearStop();
            LockLeaseLostException loss = stopped.get();
            if (failure != null && loss != null) {
                result.completeExceptionally(new LockLeaseLostException(loss.getKey(), loss.getReason(),
                        LockReleaser.unwrap(failure)));
            }
            else if (failure != null) {
                result.completeExceptionally(LockReleaser.unwrap(failure));
            }
            else {
                result.complete(value);
            }
        }));
        return result;
    }

    /**
     * {@link LockTemplate#acquireAsync} on checked full keys and supported options. The call itself is the
     * {@link HeldLock} handed back; a caller that cancels the future before it is handed one gets nothing held.
     */
    CompletableFuture<HeldLock> acquireAsync(String[] fullKeys, LockOptions options) {
        CompletableFuture<HeldLock> result = new CompletableFuture<>();
        CompletableFuture<ActiveCall> acquisition = acquirer.take(fullKeys, options);
        result.whenComplete((held, failure) -> {
            if (failure instanceof CancellationException) {
                acquisition.cancel(false);
            }
        });
        acquisition.whenComplete((taken, failure) -> {
            if (failure != null) {
                result.completeExceptionally(LockReleaser.unwrap(failure));
            }
            else if (taken.failedKey() != null) {
                result.completeExceptionally(
                        new LockAcquisitionException(taken.failedKey(), Duration.ofNanos(taken.waitNanos), null));
            }
            else if (result.isDone()) {
                releaser.releasePartial(taken, taken.keys.length, LockCallOutcome.CANCELLED);
            }
            else {
                acquirer.watch(taken);
                if (!result.complete(taken)) {
                    // cancelled meanwhile: the caller is gone
                    taken.releaseAsync();
                }
            }
        });
        return result;
    }
}

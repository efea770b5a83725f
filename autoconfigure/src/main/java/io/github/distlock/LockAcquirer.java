package io.github.distlock;

import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import io.github.distlock.observation.LockCallOutcome;
import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import io.micrometer.observation.ObservationRegistry;

/**
 * The one acquisition path of {@link DefaultLockTemplate}, blocking and asynchronous calls alike: takes every key of a
 * call for one new owner, one after the other in their global order, within one wait, on the provider's futures. The
 * first key that can't be had gives back those taken before it (all or none); a caller that stops waiting stops the
 * backend's wait and gets back nothing held.
 *
 * <p>A blocking call on one key, the common call, skips the chain: its thread waits on the provider's future and does
 * the same bookkeeping itself ({@code takeOne}).
 */
final class LockAcquirer {

    private final LockProvider provider;
    private final long defaultWaitNanos;
    private final long defaultLeaseNanos;
    private final LockNotifier notifier;
    private final CallRegistry registry;
    private final LockReleaser releaser;

    LockAcquirer(LockProvider provider, LockOptions defaults, LockNotifier notifier, CallRegistry registry,
            LockReleaser releaser) {
        this.provider = provider;
        this.defaultWaitNanos = defaults.waitTime().toNanos();
        this.defaultLeaseNanos = (defaults.leaseTime() != null) ? defaults.leaseTime().toNanos() : 0;
        this.notifier = notifier;
        this.registry = registry;
        this.releaser = releaser;
    }

    /**
     * Waits for the acquisition. Interrupted, it gives back whatever the acquisition still brings (never left held and
     * renewed for a caller that is gone) and keeps the interrupt.
     */
    ActiveCall takeBlocking(String[] keys, LockOptions options) {
        if (keys.length == 1) {
            return takeOne(keys, options);
        }
        CompletableFuture<ActiveCall> acquisition = take(keys, options);
        try {
            return acquisition.get();
        }
        catch (InterruptedException ex) {
            // the chain sees the cancellation and gives back what it took or still takes; if it completed first
            // (between the interrupt and the cancel), what it took is given back here
            if (!acquisition.cancel(false)) {
                acquisition.thenAccept(late -> {
                    if (late.failedKey() == null) {
                        releaser.releasePartial(late, late.keys.length, LockCallOutcome.CANCELLED);
                    }
                });
            }
            Thread.currentThread().interrupt();
            notifier.notifyWaited(LockListener::onNotAcquired, keys[0], System.nanoTime(), ex);
            throw new LockAcquisitionException(String.join(", ", keys), Duration.ofNanos(waitNanos(options)), ex);
        }
        catch (ExecutionException ex) {
            Throwable cause = ex.getCause();
            throw (cause instanceof RuntimeException runtime) ? runtime : new IllegalStateException(cause);
        }
    }

    /**
     * {@link #takeBlocking} of one key, the common call: the calling thread waits on the provider's future itself and
     * does the bookkeeping, so the thread that completes it (a client's event loop) only wakes the caller and runs no
     * code of ours, and a call makes no future or callback of its own. Same outcomes, listeners and call ends as the
     * chain of {@link #take}.
     */
    private ActiveCall takeOne(String[] keys, LockOptions options) {
        ActiveCall call = start(keys, options);
        String key = keys[0];
        CompletableFuture<LockHandle> acquisition;
        try {
            acquisition = provider.acquire(request(call, key));
        }
        catch (IllegalArgumentException ex) {
            // a key or an option the backend refuses: the caller's mistake, not an outage
            registry.end(call, LockCallOutcome.ERROR, null);
            throw ex;
        }
        catch (RuntimeException ex) {
            throw failedOne(call, key, ex);
        }
        LockHandle handle;
        try {
            handle = acquisition.get();
        }
        catch (InterruptedException ex) {
            abandonOne(call, acquisition);
            Thread.currentThread().interrupt();
            notifier.notifyWaited(LockListener::onNotAcquired, key, call.start, ex);
            throw new LockAcquisitionException(key, Duration.ofNanos(call.waitNanos), ex);
        }
        catch (ExecutionException ex) {
            throw failedOne(call, key, ex.getCause());
        }
        catch (CancellationException ex) {
            throw failedOne(call, key, ex);
        }
        if (handle == null) {
            notifier.notifyWaited(LockListener::onNotAcquired, key, call.start, null);
            call.failedAt(key);
            registry.end(call, LockCallOutcome.NOT_ACQUIRED, null);
            return call;
        }
        call.handles[0] = handle;
        call.acquired(System.nanoTime());
        return call;
    }

    /**
     * Stops the backend's wait for a caller that stopped waiting; a lock granted before the cancel is given back (never
     * left held and renewed for a caller that is gone).
     */
    private void abandonOne(ActiveCall call, CompletableFuture<LockHandle> acquisition) {
        if (acquisition.cancel(false)) {
            registry.end(call, LockCallOutcome.CANCELLED, null);
            return;
        }
        // Not cancelled: either already completed, or a provider's future that refuses cancel and may still grant
        // later. Either way the answer is taken whenever it comes (at once if it is already there), and a lock it
        // brings is given back, never left held and renewed for a caller that is gone.
        acquisition.whenComplete((late, failure) -> {
            if (late != null) {
                call.handles[0] = late;
                releaser.releasePartial(call, 1, LockCallOutcome.CANCELLED);
            }
            else {
                registry.end(call, LockCallOutcome.CANCELLED, null);
            }
        });
    }

    /** What {@link #failTaking} does for the only key of a call, on the calling thread; returns what to throw. */
    private RuntimeException failedOne(ActiveCall call, String key, Throwable failure) {
        notifier.notifyWaited(LockListener::onNotAcquired, key, call.start, failure);
        // a closed key is an answer, not an outage: the caller gets it as it is
        if (failure instanceof LockKeyClosedException closed) {
            registry.end(call, LockCallOutcome.NOT_ACQUIRED, null);
            return closed;
        }
        registry.end(call, LockCallOutcome.ERROR, null);
        return new LockBackendException(key, failure);
    }

    /**
     * Takes every key of {@code keys} (sorted, distinct) for one new owner, one after the other, within one wait. The
     * future never completes exceptionally for contention: the call names the key that could not be had
     * ({@link ActiveCall#failedKey()}), and the keys taken before it have been released.
     */
    CompletableFuture<ActiveCall> take(String[] keys, LockOptions options) {
        ActiveCall call = start(keys, options);
        CompletableFuture<ActiveCall> result = new CompletableFuture<>();
        takeFrom(0, call, result);
        return result;
    }

    /** A new call for a new owner, registered as waiting (and observed, with a registry) from now on. */
    private ActiveCall start(String[] keys, LockOptions options) {
        long waitNanos = waitNanos(options);
        long leaseNanos = leaseNanos(options);
        LockOwner owner = LockOwner.next();
        long start = System.nanoTime();
        ObservationRegistry observationRegistry = notifier.observationRegistry();
        ActiveCall call = new ActiveCall(keys, options, owner, waitNanos, leaseNanos, start,
                notifier.startObservation(keys, options, observationRegistry), observationRegistry, releaser);
        registry.add(call);
        return call;
    }

    /** The request for {@code key} of {@code call}, with what is left of the call's one wait. */
    private static LockRequest request(ActiveCall call, String key) {
        LockOptions options = call.options;
        // one wait for all keys: later keys get what is left of it, and "try once" stays "try once" for each
        long waitNanos = (call.waitNanos == 0) ? 0
                : Math.max(0, call.waitNanos - (System.nanoTime() - call.start));
        return new LockRequest(key, waitNanos, call.leaseNanos, options.fenced(), options.type(), call.lockOwner,
                options.permits());
    }

    private void takeFrom(int index, ActiveCall call, CompletableFuture<ActiveCall> result) {
        String key = call.keys[index];
        CompletableFuture<LockHandle> acquisition;
        try {
            acquisition = provider.acquire(request(call, key));
        }
        catch (IllegalArgumentException ex) {
            // a key or an option the backend refuses: the caller's mistake, not an outage
            releaser.releasePartial(call, index, LockCallOutcome.ERROR)
                    .whenComplete((ignored, never) -> result.completeExceptionally(ex));
            return;
        }
        catch (RuntimeException ex) {
            failTaking(index, call, key, ex, result);
            return;
        }
        // a caller that stops waiting (interrupted, cancelled) stops the backend's wait too: a backend left polling or
        // queued would take the key after the holder's release only to give it back, ahead of the live waiters
        result.whenComplete((ignored, never) -> {
            if (!acquisition.isDone()) {
                acquisition.cancel(false);
            }
        });
        acquisition.whenComplete((handle, failure) -> {
            if ((failure != null || handle == null) && result.isDone()) {
                // abandoned, and the caller has been told: only give back the keys taken before this one
                releaser.releasePartial(call, index, LockCallOutcome.CANCELLED);
            }
            else if (failure != null) {
                failTaking(index, call, key, LockReleaser.unwrap(failure), result);
            }
            else if (handle == null) {
                notifier.notifyWaited(LockListener::onNotAcquired, key, call.start, null);
                call.failedAt(key);
                // all or none: the caller hears "not acquired" once nothing of this call is held any more
                releaser.releasePartial(call, index, LockCallOutcome.NOT_ACQUIRED)
                        .whenComplete((ignored, never) -> result.complete(call));
            }
            else {
                call.handles[index] = handle;
                if (index + 1 == call.keys.length) {
                    // written after every handle: a snapshot that sees the call held sees its handles
                    call.acquired(System.nanoTime());
                    if (!result.complete(call)) {
                        // abandoned (interrupted, cancelled) while the last key was on its way
                        releaser.releasePartial(call, index + 1, LockCallOutcome.CANCELLED);
                    }
                }
                else if (result.isDone()) {
                    // abandoned while taking: give back what was taken
                    releaser.releasePartial(call, index + 1, LockCallOutcome.CANCELLED);
                }
                else {
                    takeFrom(index + 1, call, result);
                }
            }
        });
    }

    private void failTaking(int index, ActiveCall call, String key, Throwable failure,
            CompletableFuture<ActiveCall> result) {
        notifier.notifyWaited(LockListener::onNotAcquired, key, call.start, failure);
        // a closed key is an answer, not an outage: the caller gets it as it is
        Throwable reported = (failure instanceof LockKeyClosedException closed) ? closed
                : new LockBackendException(key, failure);
        releaser.releasePartial(call, index, (reported instanceof LockKeyClosedException) ? LockCallOutcome.NOT_ACQUIRED
                : LockCallOutcome.ERROR).whenComplete((ignored, never) -> result.completeExceptionally(reported));
    }

    /** Reports the acquisitions of a call that got its keys and registers the lost-while-held reports. */
    void watch(ActiveCall call) {
        long acquiredAt = call.acquiredAt;
        for (int i = 0; i < call.keys.length; i++) {
            String key = call.keys[i];
            notifier.notifyWaited(LockListener::onAcquired, key, call.start, null);
            call.handles[i].whenLost(reason -> {
                // the stop first: a slow listener must not delay it
                try {
                    call.leaseLost(key, reason);
                }
                finally {
                    notifier.reportLostWhileHeld(key, acquiredAt, reason);
                }
            });
        }
    }

    long waitNanos(LockOptions options) {
        return (options.waitTime() != null) ? LockDurations.toNanos(options.waitTime()) : defaultWaitNanos;
    }

    private long leaseNanos(LockOptions options) {
        return (options.leaseTime() != null) ? LockDurations.toNanos(options.leaseTime()) : defaultLeaseNanos;
    }
}

package io.github.distlock;

import java.time.Duration;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;

/**
 * The blocking calls of {@link DefaultLockTemplate} ({@code execute}, {@code tryExecute}): re-enter the keys this
 * thread already holds, take the others, run the guarded code under the frames of {@link LockContext} (and the
 * call's observation scope), and hand the call to the {@link LockReleaser} when it returns.
 *
 * <p>Order on the way out, which the re-entry rules rely on: the frames are popped (innermost first) before the
 * release is asked for, so a lock being released is never re-entered through a frame of this thread; a release bound
 * to the transaction keeps the keys re-enterable through deferred frames instead ({@link LockContext}).
 */
final class BlockingCalls {

    private final LockProvider provider;
    private final LockAcquirer acquirer;
    private final LockReleaser releaser;

    BlockingCalls(LockProvider provider, LockAcquirer acquirer, LockReleaser releaser) {
        this.provider = provider;
        this.acquirer = acquirer;
        this.releaser = releaser;
    }

    /** Runs {@code callback} under every key of {@code keys} (full keys, distinct, in their global order). */
    <T, E extends Throwable> LockResult<T> run(String[] keys, LockOptions options, LockCallback<T, E> callback,
            boolean throwWhenNotAcquired) throws E {
        // made only for a call that re-enters: most calls are not nested
        LockContext.Frame[] reentered = null;
        int missing = 0;
        for (int i = 0; i < keys.length; i++) {
            LockContext.Frame held = LockContext.reentry(provider, keys[i], options.type(), options.permits());
            if (held == null) {
                missing++;
            }
            else {
                if (reentered == null) {
                    reentered = new LockContext.Frame[keys.length];
                }
                reentered[i] = held;
                checkStillHeld(keys[i], held.handle());
            }
        }
        ActiveCall taken = null;
        if (missing > 0) {
            String[] toTake = (reentered == null) ? keys : missing(keys, reentered, missing);
            taken = acquirer.takeBlocking(toTake, options);
            if (taken.failedKey() != null) {
                if (throwWhenNotAcquired) {
                    throw new LockAcquisitionException(taken.failedKey(), Duration.ofNanos(taken.waitNanos), null);
                }
                return LockResult.notAcquired();
            }
        }
        if (options.fenced() && reentered != null) {
            issueTokensForReentry(keys, reentered, taken);
        }
        // the frames of one call are pushed one on the other: popping the first pops them all
        LockContext.Frame first = null;
        try {
            for (int i = 0; i < keys.length; i++) {
                LockContext.Frame frame = (reentered != null && reentered[i] != null) ? LockContext.enter(reentered[i])
                        : LockContext.enter(provider, taken, taken.indexOf(keys[i]));
                if (first == null) {
                    first = frame;
                }
            }
            CodeInterrupt interrupt = null;
            if (taken != null) {
                // inside the try: whatever happens from here on, the locks are released
                acquirer.watch(taken);
                if (taken.options.leaseLostPolicy() != LeaseLostPolicy.REPORT) {
                    // CANCEL too: a blocking call's only means of cancelling is its thread's interrupt
                    interrupt = new CodeInterrupt();
                    taken.onLeaseLost(interrupt);
                }
            }
            Observation observation = (taken != null) ? taken.observation : null;
            if (observation == null) {
                return runCode(callback, interrupt, taken);
            }
            // spans the guarded code opens on this thread become children of the lock's
            ObservationRegistry registry = taken.observationRegistry;
            Observation.Scope previous = registry.getCurrentObservationScope();
            Observation.Scope scope = LockNotifier.openScope(observation, registry, previous, keys);
            try {
                return runCode(callback, interrupt, taken);
            }
            finally {
                LockNotifier.closeScope(scope, registry, previous, keys);
            }
        }
        finally {
            try {
                if (first != null) {
                    LockContext.exit(first);
                }
            }
            finally {
                if (taken != null) {
                    releaser.releaseAfterCall(taken);
                }
            }
        }
    }

    /**
     * Runs the code; with an interrupt armed, a code that ends with an exception after the interrupt was delivered
     * ends the call with {@link LockLeaseLostException} (its cause that exception), and the interrupt never outlives
     * the code.
     */
    private static <T, E extends Throwable> LockResult<T> runCode(LockCallback<T, E> callback, CodeInterrupt interrupt,
            ActiveCall taken) throws E {
        if (interrupt == null) {
            return LockResult.of(callback.doInLock());
        }
        T value;
        try {
            value = callback.doInLock();
        }
        catch (Throwable ex) {
            LockLeaseLostException stopped = stopEnded(interrupt, taken);
            if (stopped != null) {
                throw new LockLeaseLostException(stopped.getKey(), stopped.getReason(), ex);
            }
            throw ex;
        }
        // finished in spite of a stop: a lost lease never turns finished work into a failure (it is reported)
        stopEnded(interrupt, taken);
        return LockResult.of(value);
    }

    private static LockLeaseLostException stopEnded(CodeInterrupt interrupt, ActiveCall taken) {
        taken.clearStop();
        return interrupt.codeReturned();
    }

    /**
     * A nested call re-enters only a lock its outer call still holds: one whose lease ran out or whose key was taken
     * away behind its back belongs to nobody here, and another holder may be inside it right now. Costs one backend
     * round trip per nested call, as re-entering in the backend itself would.
     */
    private static void checkStillHeld(String fullKey, LockHandle handle) {
        boolean held;
        try {
            held = handle.stillHeld();
        }
        catch (RuntimeException ex) {
            throw new LockBackendException(fullKey, ex);
        }
        if (!held) {
            throw new LockAcquisitionException(fullKey, Duration.ZERO, new IllegalStateException("the lock held by the "
                    + "outer call on this thread was lost (its lease ran out or its key was taken away), so the nested "
                    + "call does not run"));
        }
    }

    /** A fenced nested call inside an unfenced hold gets a token issued for the held lock (the outer sees it too). */
    private void issueTokensForReentry(String[] keys, LockContext.Frame[] reentered, ActiveCall taken) {
        for (int i = 0; i < keys.length; i++) {
            if (reentered[i] == null || reentered[i].handle().fencingToken() >= 0) {
                continue;
            }
            long token;
            try {
                token = reentered[i].handle().newFencingToken();
            }
            catch (UnsupportedOperationException ex) {
                releaseTaken(taken);
                throw new IllegalStateException("Lock '" + keys[i] + "' is held without fencing and its backend cannot "
                        + "issue a token for the nested fenced call", ex);
            }
            catch (RuntimeException ex) {
                releaseTaken(taken);
                throw new LockBackendException(keys[i], ex);
            }
            if (token < 0) {
                releaseTaken(taken);
                throw new LockAcquisitionException(keys[i], Duration.ZERO, new IllegalStateException("the lock held by "
                        + "the outer call was lost (lease ran out) before the nested fenced call could get a token"));
            }
        }
    }

    private void releaseTaken(ActiveCall taken) {
        if (taken != null) {
            releaser.releaseAsync(taken);
        }
    }

    private static String[] missing(String[] keys, LockContext.Frame[] reentered, int count) {
        String[] missing = new String[count];
        int j = 0;
        for (int i = 0; i < keys.length; i++) {
            if (reentered[i] == null) {
                missing[j++] = keys[i];
            }
        }
        return missing;
    }
}

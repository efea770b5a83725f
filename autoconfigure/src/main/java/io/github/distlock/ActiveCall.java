package io.github.distlock;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

import io.github.distlock.observation.LockCallOutcome;
import io.github.distlock.observation.LockObservationContext;
import io.github.distlock.spi.LockHandle;
import io.micrometer.observation.Observation;

/**
 * One lock call of {@link DefaultLockTemplate} from its first wait to its last release: what the template lists as
 * active and what its observation spans.
 *
 * <p>Written by the thread(s) of the acquisition and release chain, read by any thread that takes a snapshot.
 * {@link #acquiredAt} is written last when the call gets its keys (after {@code handles} is filled), so a reader that
 * sees it non-zero sees every handle. Ended once ({@link #end}), whichever path gets there first.
 */
final class ActiveCall {

    final String[] keys;
    final LockHandle[] handles;
    final LockOptions options;
    final long owner;
    final long leaseNanos;
    final String thread;
    final long start;
    /** {@code null} when no observation registry is configured. */
    final Observation observation;
    /** The registry {@link #observation} belongs to (its scopes are that registry's). */
    final io.micrometer.observation.ObservationRegistry observationRegistry;
    /** 0 while waiting; when every key is held, the {@link System#nanoTime()} it happened. */
    volatile long acquiredAt;
    /** Keys whose release has not answered yet; only counted for calls on several keys. */
    private int releasesLeft;
    /** The worst outcome of the releases answered so far (ordinal order: later is worse); under {@code this}. */
    private LockCallOutcome releaseOutcome = LockCallOutcome.RELEASED;
    /** 0 until ended; set once through {@link #ENDED}. Fields, not atomics: one object per call, not three. */
    @SuppressWarnings("unused")
    private volatile int ended;

    private static final VarHandle ENDED;

    static {
        try {
            ENDED = MethodHandles.lookup().findVarHandle(ActiveCall.class, "ended", int.class);
        }
        catch (ReflectiveOperationException ex) {
            throw new ExceptionInInitializerError(ex);
        }
    }

    ActiveCall(String[] keys, LockHandle[] handles, LockOptions options, long owner, long leaseNanos, long start,
            Observation observation, io.micrometer.observation.ObservationRegistry observationRegistry) {
        this.keys = keys;
        this.handles = handles;
        this.options = options;
        this.owner = owner;
        this.leaseNanos = leaseNanos;
        this.thread = Thread.currentThread().getName();
        this.start = start;
        this.observation = observation;
        this.observationRegistry = observationRegistry;
        this.releasesLeft = keys.length;
    }

    void acquired(long acquiredAt) {
        this.acquiredAt = acquiredAt;
        if (observation != null) {
            try {
                observation.event(LockObservationContext.ACQUIRED);
            }
            catch (Throwable ex) {
                // runs inside the acquisition chain: a throw here would leave the caller waiting forever with the lock
                org.apache.commons.logging.LogFactory.getLog(ActiveCall.class)
                        .error("Observation handler failed on the acquisition of " + String.join(", ", keys) + "; ignored", ex);
            }
        }
    }

    /**
     * Records the answer of one key's release; returns the call's outcome once every key has answered, otherwise
     * {@code null}.
     */
    LockCallOutcome keyReleased(LockCallOutcome outcome) {
        if (keys.length == 1) {
            return outcome;
        }
        // releases of several keys may answer on several threads at once
        synchronized (this) {
            if (outcome.ordinal() > releaseOutcome.ordinal()) {
                releaseOutcome = outcome;
            }
            return (--releasesLeft == 0) ? releaseOutcome : null;
        }
    }

    /** Whether this is the first end of the call: only that one is reported. */
    boolean end() {
        return ENDED.compareAndSet(this, 0, 1);
    }

    /** Owner ids are sequential: a cheap, well-spread hash without the identity hash's header write. */
    @Override
    public int hashCode() {
        return Long.hashCode(owner);
    }

    @Override
    public boolean equals(Object other) {
        return this == other;
    }
}

package io.github.distlock;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

import io.github.distlock.observation.LockCallOutcome;
import io.github.distlock.observation.LockObservationContext;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;

/**
 * One lock call of {@link DefaultLockTemplate} from its first wait to its last release, and everything about it: its
 * keys, options, owner, handles, timings and state. The same object is what the acquisition hands back (to the
 * blocking call, or to {@link LockTemplate#acquireAsync} as its {@link HeldLock}), what the {@link CallRegistry} lists
 * as active, what the {@link LockContext} frames of this thread point at, and what its observation spans.
 *
 * <p>Written by the thread(s) of the acquisition and release chain, read by any thread that takes a snapshot.
 * {@link #acquiredAt} is written last when the call gets its keys (after {@code handles} is filled), so a reader that
 * sees it non-zero sees every handle. {@link #failedKey} is written before the acquisition's future completes with
 * this call, so whoever got the call from that future sees it. Ended once ({@link #end}), whichever path gets there
 * first.
 */
final class ActiveCall implements HeldLock {

    final String[] keys;
    final LockHandle[] handles;
    final LockOptions options;
    final long owner;
    /** {@link #owner} as the backend is asked for it: made once per call, for each of its keys. */
    final LockOwner lockOwner;
    final long leaseNanos;
    /** The one wait of every key of the call; later keys get what is left of it. */
    final long waitNanos;
    final String thread;
    final long start;
    /** {@code null} when no observation registry is configured. */
    final Observation observation;
    /** The registry {@link #observation} belongs to (its scopes are that registry's). */
    final ObservationRegistry observationRegistry;
    /** Releases the call when it is handed back as a {@link HeldLock}. */
    private final LockReleaser releaser;
    /** 0 while waiting; when every key is held, the {@link System#nanoTime()} it happened. */
    volatile long acquiredAt;
    /** The key that could not be had, or {@code null}: see the class comment for when it is visible. */
    private volatile String failedKey;
    /** Keys whose release has not answered yet; only counted for calls on several keys. */
    private int releasesLeft;
    /** The worst outcome of the releases answered so far (ordinal order: later is worse); under {@code this}. */
    private LockCallOutcome releaseOutcome = LockCallOutcome.RELEASED;
    /** The release asked through {@link #releaseAsync()}, {@code null} until then; under {@code this}. */
    private CompletableFuture<Void> heldRelease;
    /** The first loss reported while held, {@code null} until then; under {@code this}. */
    private LockLeaseLostException lost;
    /** What stops the call's code on a loss (its {@link LeaseLostPolicy}), {@code null} when nothing; under {@code this}. */
    private java.util.function.Consumer<LockLeaseLostException> stop;
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

    ActiveCall(String[] keys, LockOptions options, LockOwner owner, long waitNanos, long leaseNanos, long start,
            Observation observation, ObservationRegistry observationRegistry, LockReleaser releaser) {
        this.keys = keys;
        this.handles = new LockHandle[keys.length];
        this.options = options;
        this.owner = owner.id();
        this.lockOwner = owner;
        this.waitNanos = waitNanos;
        this.leaseNanos = leaseNanos;
        this.thread = Thread.currentThread().getName();
        this.start = start;
        this.observation = observation;
        this.observationRegistry = observationRegistry;
        this.releaser = releaser;
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

    /** Records that {@code key} could not be had; the call then holds nothing once its partial release answered. */
    void failedAt(String key) {
        this.failedKey = key;
    }

    /** The key that could not be had, or {@code null} when the call got every key. */
    String failedKey() {
        return failedKey;
    }

    boolean isHeld() {
        return acquiredAt != 0;
    }

    /** The position of {@code key} among {@link #keys}. */
    int indexOf(String key) {
        for (int i = 0; i < keys.length; i++) {
            if (keys[i].equals(key)) {
                return i;
            }
        }
        throw new IllegalStateException("not taken: " + key);
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

    // ---------------------------------------------------------------- stopping the code when the lock is lost

    /**
     * Records that the backend reported {@code key} lost while held and runs the stop, if one is set and this is the
     * call's first loss. Runs on the backend's reporting thread.
     */
    void leaseLost(String key, String reason) {
        java.util.function.Consumer<LockLeaseLostException> toRun;
        LockLeaseLostException loss;
        synchronized (this) {
            if (lost != null) {
                return;
            }
            lost = new LockLeaseLostException(key, reason, null);
            loss = lost;
            toRun = stop;
            stop = null;
        }
        if (toRun != null) {
            toRun.accept(loss);
        }
    }

    /**
     * Sets what stops the code on the first loss; runs it at once (on this thread) when the loss came first. The stop
     * runs at most once, and never after {@link #clearStop()}.
     */
    void onLeaseLost(java.util.function.Consumer<LockLeaseLostException> stop) {
        LockLeaseLostException loss;
        synchronized (this) {
            loss = lost;
            if (loss == null) {
                this.stop = (this.stop == null) ? stop : this.stop.andThen(stop);
                return;
            }
        }
        stop.accept(loss);
    }

    /**
     * Removes the stop, so that a loss reported from now on stops nothing. The thread that reports a loss runs the stop
     * outside the monitor: a stop that must never run after this (an interrupt) synchronizes on its own.
     */
    void clearStop() {
        synchronized (this) {
            stop = null;
        }
    }

    /** The first loss reported while held, or {@code null}. */
    synchronized LockLeaseLostException lost() {
        return lost;
    }

    // ---------------------------------------------------------------- as the HeldLock of acquireAsync

    @Override
    public List<String> keys() {
        return List.of(keys);
    }

    @Override
    public OptionalLong fencingToken() {
        long token = handles[0].fencingToken();
        return (token >= 0) ? OptionalLong.of(token) : OptionalLong.empty();
    }

    @Override
    public boolean stillHeld() {
        for (LockHandle handle : handles) {
            if (!handle.stillHeld()) {
                return false;
            }
        }
        return true;
    }

    @Override
    public boolean lostWhileHeld() {
        for (LockHandle handle : handles) {
            if (handle.lostWhileHeld()) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void whenLost(java.util.function.Consumer<LockLeaseLostException> callback) {
        onLeaseLost(java.util.Objects.requireNonNull(callback, "callback"));
    }

    /** Released once: later calls, from any thread, get the future of the first. */
    @Override
    public CompletableFuture<Void> releaseAsync() {
        CompletableFuture<Void> released;
        synchronized (this) {
            if (heldRelease != null) {
                return heldRelease;
            }
            released = new CompletableFuture<>();
            heldRelease = released;
        }
        // outside the monitor: a release that answers at once runs keyReleased on this thread, which takes it too
        releaser.release(this).whenComplete((ignored, never) -> released.complete(null));
        return released;
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

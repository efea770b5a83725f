package io.github.distlock;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import io.github.distlock.observation.LockCallOutcome;
import io.github.distlock.spi.LockHandle;

/**
 * The calls in progress of one {@link DefaultLockTemplate}, waiting or holding: one entry per call, added when it
 * starts waiting and removed when it ends (its last release has answered, or it never got its keys). What
 * {@link LockActivity} reads.
 */
final class CallRegistry implements LockActivity {

    /** A set on a map: {@link ActiveCall} hashes by its owner id. */
    private final Set<ActiveCall> active = ConcurrentHashMap.newKeySet();

    void add(ActiveCall call) {
        active.add(call);
    }

    /**
     * Ends a call once: it leaves the active set and its observation stops with {@code outcome}. Whichever path gets
     * here first (last release answered, partial release after a failure, abandonment) ends it; the others do nothing.
     */
    void end(ActiveCall call, LockCallOutcome outcome, Throwable failure) {
        if (!call.end()) {
            return;
        }
        active.remove(call);
        LockNotifier.stopObservation(call, outcome, failure);
    }

    @Override
    public List<ActiveLock> activeLocks() {
        List<ActiveLock> locks = new ArrayList<>();
        Instant now = Instant.now();
        long nowNanos = System.nanoTime();
        for (ActiveCall call : active) {
            long acquiredAt = call.acquiredAt;
            boolean held = acquiredAt != 0;
            long since = held ? acquiredAt : call.start;
            Duration duration = Duration.ofNanos(Math.max(0, nowNanos - since));
            Duration lease = (call.leaseNanos == 0) ? null : Duration.ofNanos(call.leaseNanos);
            Duration remaining = (!held || lease == null) ? null
                    : Duration.ofNanos(Math.max(0, call.leaseNanos - (nowNanos - acquiredAt)));
            for (int i = 0; i < call.keys.length; i++) {
                LockHandle handle = held ? call.handles[i] : null;
                long token = (handle != null) ? handle.fencingToken() : -1;
                locks.add(new ActiveLock(call.keys[i], call.options.type(), call.options.name(), call.thread,
                        call.owner, held, now.minus(duration), duration, lease, remaining, token));
            }
        }
        return locks;
    }

    @Override
    public int heldLockCount() {
        int held = 0;
        for (ActiveCall call : active) {
            if (call.acquiredAt != 0) {
                held += call.keys.length;
            }
        }
        return held;
    }

    @Override
    public int waitingCallCount() {
        int waiting = 0;
        for (ActiveCall call : active) {
            if (call.acquiredAt == 0) {
                waiting++;
            }
        }
        return waiting;
    }
}

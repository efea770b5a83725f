package io.github.distlock;

import java.util.OptionalLong;

import io.github.distlock.spi.LockHandle;

/**
 * What the code running under a lock can learn about it, and the locks this thread holds through
 * {@link LockTemplate}, which is how nested calls re-enter a lock without taking it in the backend again.
 *
 * <p>Invariant: a frame is pushed for every call that runs under a lock (first acquisition or re-entry) and popped
 * when it returns, before the lock is released; a thread that holds nothing has no frame, so nothing of one call can
 * be seen by the next call a pooled thread serves.
 */
public final class LockContext {

    /**
     * A call running under the lock of {@code handle} for {@code key}, of {@code type}, nested in {@code outer}, taken
     * through the backend {@code scope}: two templates on two backends never re-enter each other's locks.
     */
    record Frame(Object scope, String key, LockHandle handle, LockType type, int permits, Frame outer) {
    }

    private static final ThreadLocal<Frame> FRAMES = new ThreadLocal<>();

    /**
     * Locks whose release waits for the end of this thread's transaction: their calls have returned, but a later call
     * in the same transaction must re-enter them instead of waiting for itself. Cleared when the transaction ends.
     */
    private static final ThreadLocal<Frame> DEFERRED = new ThreadLocal<>();

    private LockContext() {
    }

    /**
     * The fencing token of the innermost fenced lock ({@link DistributedLock#fenced()},
     * {@link LockOptions#withFencing()}) this thread holds, or empty when it holds none. Tokens of a key only grow:
     * storage that keeps the highest token it has accepted can reject a write carrying a lower one, which is what a
     * holder whose lease ran out during a pause would send. A nested fenced call on a key this thread already holds
     * gets the same token as the outer call, or, when the outer call was not fenced, a new one that the outer call
     * sees too from then on.
     */
    public static OptionalLong fencingToken() {
        for (Frame frame = FRAMES.get(); frame != null; frame = frame.outer()) {
            long token = frame.handle().fencingToken();
            if (token >= 0) {
                return OptionalLong.of(token);
            }
        }
        return OptionalLong.empty();
    }

    /**
     * The fencing token of the fenced lock for {@code fullKey} (prefix included) this thread holds, or empty.
     */
    public static OptionalLong fencingToken(String fullKey) {
        LockHandle handle = held(fullKey);
        long token = (handle != null) ? handle.fencingToken() : -1;
        return (token >= 0) ? OptionalLong.of(token) : OptionalLong.empty();
    }

    /**
     * The full keys (prefix included) of the locks this thread holds through {@link LockTemplate} right now, innermost
     * first: those of the calls it is running under, and those whose release waits for the end of its transaction.
     * Empty outside any lock. For assertions in tests ("this code ran under lock X") and diagnostics.
     */
    public static java.util.List<String> heldKeys() {
        java.util.List<String> keys = new java.util.ArrayList<>();
        for (Frame frame = FRAMES.get(); frame != null; frame = frame.outer()) {
            if (!keys.contains(frame.key())) {
                keys.add(frame.key());
            }
        }
        for (Frame frame = DEFERRED.get(); frame != null; frame = frame.outer()) {
            if (!keys.contains(frame.key())) {
                keys.add(frame.key());
            }
        }
        return keys;
    }

    /** The lock this thread holds for {@code fullKey}, or {@code null}. */
    static LockHandle held(String fullKey) {
        Frame frame = find(null, fullKey);
        return (frame != null) ? frame.handle() : null;
    }

    /**
     * The lock this thread holds for {@code fullKey}, to be re-entered by a call of {@code type} with {@code permits},
     * or {@code null} when it holds none.
     *
     * @throws NestedLockException when the hold does not give the nested call what it asks for: see
     * {@link NestedLockException#reenters}
     */
    static Frame reentry(Object scope, String fullKey, LockType type, int permits) {
        Frame frame = find(scope, fullKey);
        if (frame != null && (frame.permits() != permits || !NestedLockException.reenters(frame.type(), type))) {
            throw new NestedLockException(fullKey, frame.type(), frame.permits(), type, permits);
        }
        return frame;
    }

    /** The frame of {@code fullKey} taken through {@code scope} (any scope when {@code null}). */
    private static Frame find(Object scope, String fullKey) {
        for (Frame frame = FRAMES.get(); frame != null; frame = frame.outer()) {
            if (frame.key().equals(fullKey) && (scope == null || frame.scope() == scope)) {
                return frame;
            }
        }
        for (Frame frame = DEFERRED.get(); frame != null; frame = frame.outer()) {
            if (frame.key().equals(fullKey) && (scope == null || frame.scope() == scope)) {
                return frame;
            }
        }
        return null;
    }

    static Frame enter(Object scope, String fullKey, LockHandle handle, LockType type, int permits) {
        Frame frame = new Frame(scope, fullKey, handle, type, permits, FRAMES.get());
        FRAMES.set(frame);
        return frame;
    }

    /** Keeps {@code fullKey} re-enterable by this thread until {@link #clearDeferred()}: see {@link #DEFERRED}. */
    static void defer(Object scope, String fullKey, LockHandle handle, LockType type, int permits) {
        DEFERRED.set(new Frame(scope, fullKey, handle, type, permits, DEFERRED.get()));
    }

    /** Ends what {@link #defer} began for these handles (one transaction's; an outer one's stay). */
    static void undefer(LockHandle[] handles) {
        Frame kept = null;
        java.util.ArrayDeque<Frame> frames = new java.util.ArrayDeque<>();
        for (Frame frame = DEFERRED.get(); frame != null; frame = frame.outer()) {
            frames.push(frame);
        }
        while (!frames.isEmpty()) {
            Frame frame = frames.pop();
            if (!java.util.Arrays.asList(handles).contains(frame.handle())) {
                kept = new Frame(frame.scope(), frame.key(), frame.handle(), frame.type(), frame.permits(), kept);
            }
        }
        if (kept != null) {
            DEFERRED.set(kept);
        }
        else {
            DEFERRED.remove();
        }
    }

    static void exit(Frame frame) {
        if (frame.outer() != null) {
            FRAMES.set(frame.outer());
        }
        else {
            FRAMES.remove();
        }
    }
}

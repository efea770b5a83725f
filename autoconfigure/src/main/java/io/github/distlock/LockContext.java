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
     * A call running under the lock of key {@code index} of {@code call}, nested in {@code outer}, taken through the
     * backend {@code scope}: two templates on two backends never re-enter each other's locks. A nested call that
     * re-entered a held lock gets a frame of the outer call, whose hold (handle, type, permits) is the one it runs
     * under.
     */
    record Frame(Object scope, ActiveCall call, int index, Frame outer) {

        String key() {
            return call.keys[index];
        }

        LockHandle handle() {
            return call.handles[index];
        }

        LockType type() {
            return call.options.type();
        }

        int permits() {
            return call.options.permits();
        }
    }

    /**
     * This thread's frames: the calls it runs under a lock ({@code frames}, innermost first) and the locks whose
     * release waits for the end of its transaction ({@code deferred}): their calls have returned, but a later call in
     * the same transaction must not wait for itself on them. Cleared when the transaction ends.
     *
     * <p>One thread-local for both, set only while either is non-empty (back to {@code null} as soon as both are
     * empty): a thread that holds nothing answers every question here with one {@code ThreadLocal} read, which is the
     * cost of every lock call that is not nested.
     */
    private static final class Held {

        Frame frames;

        Frame deferred;

        Frame find(Object scope, String fullKey) {
            Frame found = find(frames, scope, fullKey);
            return (found != null) ? found : find(deferred, scope, fullKey);
        }

        private static Frame find(Frame innermost, Object scope, String fullKey) {
            for (Frame frame = innermost; frame != null; frame = frame.outer()) {
                if (frame.key().equals(fullKey) && (scope == null || frame.scope() == scope)) {
                    return frame;
                }
            }
            return null;
        }
    }

    private static final ThreadLocal<Held> HELD = new ThreadLocal<>();

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
        Held held = HELD.get();
        for (Frame frame = (held != null) ? held.frames : null; frame != null; frame = frame.outer()) {
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
        Held held = HELD.get();
        if (held == null) {
            return keys;
        }
        for (Frame frame = held.frames; frame != null; frame = frame.outer()) {
            if (!keys.contains(frame.key())) {
                keys.add(frame.key());
            }
        }
        for (Frame frame = held.deferred; frame != null; frame = frame.outer()) {
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

    /**
     * Refuses an asynchronous call ({@link LockTemplate#executeAsync}) on keys of which this thread holds one through
     * {@code scope}, or returns {@code null} when it holds none of them (one {@code ThreadLocal} read when it holds
     * nothing at all).
     *
     * <p>Why: an asynchronous call never re-enters (its lock outlives this thread's call, until its stage completes, so
     * it can't be the outer call's hold), and {@code executeAsync} takes its keys for a new owner while the calling
     * thread waits: on a key this thread holds, under a call or until its transaction ends, it would wait for its own
     * thread, which waits for it (for ever with a wait of FOR_EVER, then "another caller held it"). Every type and
     * permits count alike: whether a new owner would be let in beside this thread's hold differs between backends
     * (lock families apart or one, readers joining past a queued writer or not), and the refusal does not.
     *
     * @return the exception the call fails with, naming the first such key, or {@code null}
     */
    static NestedLockException refuseAsync(Object scope, String[] fullKeys, LockType type, int permits) {
        Held held = HELD.get();
        if (held == null) {
            return null;
        }
        for (String fullKey : fullKeys) {
            Frame frame = held.find(scope, fullKey);
            if (frame != null) {
                return new AsyncNestedLockException(fullKey, frame.type(), frame.permits(), type, permits);
            }
        }
        return null;
    }

    /**
     * The refusal of {@link #refuseAsync}: a {@link NestedLockException} (what callers catch for every nested call that
     * can't run) whose message says why this one can't, since the hold may well be of the type it asks for.
     */
    private static final class AsyncNestedLockException extends NestedLockException {

        private final String message;

        AsyncNestedLockException(String fullKey, LockType heldType, int heldPermits, LockType requestedType,
                int requestedPermits) {
            super(fullKey, heldType, heldPermits, requestedType, requestedPermits);
            this.message = "Lock '" + fullKey + "' is held (" + heldType + ((heldPermits > 1) ? ", permits = "
                    + heldPermits : "") + ") by a call on this thread, or until its transaction ends; an asynchronous "
                    + "call (executeAsync, or a method returning a CompletionStage) on it never re-enters, and taking it "
                    + "for a new owner would wait for this very thread, so it is refused. Make the asynchronous call "
                    + "outside the hold, or lock another key.";
        }

        @Override
        public String getMessage() {
            return message;
        }
    }

    /** The frame of {@code fullKey} taken through {@code scope} (any scope when {@code null}). */
    private static Frame find(Object scope, String fullKey) {
        Held held = HELD.get();
        return (held != null) ? held.find(scope, fullKey) : null;
    }

    /** This thread's {@link Held}, created when it holds nothing yet. */
    private static Held held() {
        Held held = HELD.get();
        if (held == null) {
            held = new Held();
            HELD.set(held);
        }
        return held;
    }

    /** Keeps the invariant of {@link Held}: a thread that holds nothing has no thread-local value. */
    private static void forgetIfEmpty(Held held) {
        if (held.frames == null && held.deferred == null) {
            // null, not remove(): the thread's next call reads HELD first, and a get() after remove() puts the entry
            // back (a new WeakReference) while remove() cleared the old one through a native call: both on every lock
            // call, on the caller's path. The entry left behind holds nothing (its key is weak, its value null), so it
            // keeps no class of ours alive on a pooled thread either.
            HELD.set(null);
        }
    }

    /** Runs this thread under key {@code index} of {@code call} until {@link #exit}. */
    static Frame enter(Object scope, ActiveCall call, int index) {
        Held held = held();
        Frame frame = new Frame(scope, call, index, held.frames);
        held.frames = frame;
        return frame;
    }

    /** Runs this thread again under the hold of {@code outer} (a re-entry) until {@link #exit}. */
    static Frame enter(Frame outer) {
        return enter(outer.scope(), outer.call(), outer.index());
    }

    /** Keeps key {@code index} of {@code call} re-enterable by this thread until {@link #undefer}: see {@link Held}. */
    static void defer(Object scope, ActiveCall call, int index) {
        Held held = held();
        held.deferred = new Frame(scope, call, index, held.deferred);
    }

    /** Ends what {@link #defer} began for {@code call} (one transaction's; an outer one's stay). */
    static void undefer(ActiveCall call) {
        Held held = HELD.get();
        if (held == null) {
            return;
        }
        Frame kept = null;
        java.util.ArrayDeque<Frame> frames = new java.util.ArrayDeque<>();
        for (Frame frame = held.deferred; frame != null; frame = frame.outer()) {
            frames.push(frame);
        }
        while (!frames.isEmpty()) {
            Frame frame = frames.pop();
            if (frame.call() != call) {
                kept = new Frame(frame.scope(), frame.call(), frame.index(), kept);
            }
        }
        held.deferred = kept;
        forgetIfEmpty(held);
    }

    /** Pops {@code frame} and every frame entered on top of it since. */
    static void exit(Frame frame) {
        Held held = HELD.get();
        if (held == null) {
            return;
        }
        held.frames = frame.outer();
        forgetIfEmpty(held);
    }
}

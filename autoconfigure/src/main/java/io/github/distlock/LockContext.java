package io.github.distlock;

import java.util.OptionalLong;

/**
 * What the code running under a lock can learn about it.
 */
public final class LockContext {

    /** Innermost fenced lock held by this thread, linked to the ones it is nested in. */
    private record Frame(String key, long token, Frame outer) {
    }

    private static final ThreadLocal<Frame> FENCED = new ThreadLocal<>();

    private LockContext() {
    }

    /**
     * The fencing token of the innermost fenced lock ({@link DistributedLock#fenced()},
     * {@link LockOptions#withFencing()}) this thread holds, or empty when it holds none. Tokens of a key only grow:
     * storage that keeps the highest token it has accepted can reject a write carrying a lower one, which is what a
     * holder whose lease ran out during a pause would send.
     */
    public static OptionalLong fencingToken() {
        Frame frame = FENCED.get();
        return (frame != null) ? OptionalLong.of(frame.token()) : OptionalLong.empty();
    }

    /**
     * The fencing token of the fenced lock for {@code fullKey} (prefix included) this thread holds, or empty.
     */
    public static OptionalLong fencingToken(String fullKey) {
        for (Frame frame = FENCED.get(); frame != null; frame = frame.outer()) {
            if (frame.key().equals(fullKey)) {
                return OptionalLong.of(frame.token());
            }
        }
        return OptionalLong.empty();
    }

    static void push(String fullKey, long token) {
        FENCED.set(new Frame(fullKey, token, FENCED.get()));
    }

    static void pop() {
        Frame frame = FENCED.get();
        if (frame != null && frame.outer() != null) {
            FENCED.set(frame.outer());
        }
        else {
            FENCED.remove();
        }
    }
}

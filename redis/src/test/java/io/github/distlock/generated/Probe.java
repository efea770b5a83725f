package io.github.distlock.generated;

import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.LockContext;

/**
 * What the bodies of the generated calls saw, kept apart from the library's own bookkeeping: an overlap counter per
 * key (never two exclusive holders, never a reader beside a writer, never more holders than permits), a fenced
 * register per key (a new holder's token is above every token the key has seen), and whether a body ran with its lock
 * bound to its thread. Shared by both application contexts: it lives in the JVM, not in a context.
 */
final class Probe {

    /** How a body holds its key. */
    enum Kind { EXCLUSIVE, SHARED, PERMITS_2 }

    /** What a palette body does. */
    enum Mode {
        /** Runs for a moment and returns. */
        RUN,
        /** Throws {@link BodyFailure}. */
        FAIL,
        /** Stays inside until {@link Probe#release(String)}: a holder for the other instance's calls. */
        HOLD
    }

    /** The failure of a body, to be told apart from anything the lock throws. */
    static final class BodyFailure extends IllegalStateException {
        BodyFailure(String key) {
            super("body failed on " + key);
        }
    }

    static final Probe INSTANCE = new Probe();

    private final Map<String, AtomicInteger> exclusive = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> shared = new ConcurrentHashMap<>();
    private final Map<String, Long> highestToken = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    private final Map<String, CountDownLatch> entered = new ConcurrentHashMap<>();
    private final Map<String, CountDownLatch> releases = new ConcurrentHashMap<>();
    private final List<String> violations = new CopyOnWriteArrayList<>();

    /** A body inside its key; {@link #exit()} when it leaves. */
    final class Ticket {
        private final String key;
        private final Kind kind;

        private Ticket(String key, Kind kind) {
            this.key = key;
            this.kind = kind;
        }

        void exit() {
            (kind == Kind.SHARED ? shared : exclusive).get(key).decrementAndGet();
        }
    }

    /**
     * Enters {@code key}: checks the overlap and, when {@code token} is present and {@code newHolder}, that it is above
     * every token the key has seen. {@code threadBound}: the lock must be visible in {@link LockContext} here.
     */
    Ticket enter(String key, Kind kind, OptionalLong token, boolean newHolder, boolean threadBound) {
        runs.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
        if (threadBound && !LockContext.heldKeys().contains("lock:" + key)) {
            violations.add("body of " + key + " ran without its lock bound to the thread: " + LockContext.heldKeys());
        }
        AtomicInteger mine = (kind == Kind.SHARED ? shared : exclusive).computeIfAbsent(key, k -> new AtomicInteger());
        int now = mine.incrementAndGet();
        int others = (kind == Kind.SHARED ? exclusive : shared).computeIfAbsent(key, k -> new AtomicInteger()).get();
        int limit = (kind == Kind.PERMITS_2) ? 2 : (kind == Kind.SHARED ? Integer.MAX_VALUE : 1);
        if (newHolder && (now > limit || others > 0)) {
            violations.add("overlap on " + key + ": " + now + " " + kind + " holder(s) beside " + others + " other(s)");
        }
        if (token.isPresent()) {
            long t = token.getAsLong();
            Long before = highestToken.get(key);
            if (newHolder && before != null && t <= before) {
                violations.add("fencing token " + t + " on " + key + " not above " + before);
            }
            highestToken.merge(key, t, Math::max);
        }
        else if (kind != Kind.SHARED && kind != Kind.PERMITS_2 && threadBound && fencedKeys.contains(key)) {
            violations.add("fenced body of " + key + " saw no token");
        }
        return new Ticket(key, kind);
    }

    private final java.util.Set<String> fencedKeys = ConcurrentHashMap.newKeySet();

    /** The body of {@code key} is fenced: a thread-bound body must see a token. */
    void fenced(String key) {
        fencedKeys.add(key);
    }

    /** What a body in {@link Mode#HOLD} does once inside: signal and wait for {@link #release(String)}. */
    void holdIfAsked(String key, Mode mode) {
        if (mode == Mode.FAIL) {
            throw new BodyFailure(key);
        }
        if (mode != Mode.HOLD) {
            return;
        }
        entered.computeIfAbsent(key, k -> new CountDownLatch(1)).countDown();
        try {
            if (!releases.computeIfAbsent(key, k -> new CountDownLatch(1)).await(30, TimeUnit.SECONDS)) {
                violations.add("holder of " + key + " was never released");
            }
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    /** Waits until a holder is inside {@code key}, {@code count} of them for permits. */
    boolean awaitHeld(String key, int count) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            int inside = exclusive.getOrDefault(key, new AtomicInteger()).get() + shared.getOrDefault(key, new AtomicInteger()).get();
            if (inside >= count && entered.containsKey(key)) {
                return true;
            }
            CountDownLatch latch = entered.computeIfAbsent(key, k -> new CountDownLatch(1));
            latch.await(10, TimeUnit.MILLISECONDS);
        }
        return false;
    }

    void release(String key) {
        releases.computeIfAbsent(key, k -> new CountDownLatch(1)).countDown();
    }

    int runs(String key) {
        AtomicInteger count = runs.get(key);
        return (count != null) ? count.get() : 0;
    }

    List<String> violations() {
        return List.copyOf(violations);
    }
}

package io.github.distlock.test;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import io.github.distlock.LockContext;
import io.github.distlock.LockType;

/**
 * Records what the calling thread holds at a point of the code under test, so that the test can check afterwards, on
 * its own thread, that the code ran under the right lock: the key, its type, whether it was fenced. Call
 * {@link #record()} from a test double the locked code calls (a payment gateway, a repository), run the code, then
 * assert. An assertion made there instead of a recording could be swallowed by the code under test or thrown on
 * another thread; a recording is checked where the test can see it fail.
 *
 * <pre>{@code
 * LockRecorder charges = new LockRecorder(locks);        // locks: the InMemoryLockProvider bean
 * payments.onCharge(charges::record);
 *
 * orders.placeOrder(42);
 *
 * charges.assertRanUnder("lock:order:42").withType(LockType.REENTRANT).fenced();
 * }</pre>
 *
 * <p>What a thread holds is what it runs under through the {@link io.github.distlock.LockTemplate} (an annotated method
 * or a template call returning a value, and the keys held until its transaction ends); a method returning a
 * {@code CompletableFuture}, {@code Mono} or {@code Flux} holds its lock on no thread, so only the provider's keys are
 * recorded for it (they are shown in every failure). The type comes from the provider's holds of the key, which all
 * have one type (types of one key exclude each other in memory, {@code READ} with {@code READ} aside); a fenced lock is
 * found by its token. Thread-safe.
 */
public final class LockRecorder {

    /**
     * What one {@link #record()} saw.
     *
     * @param thread the name of the thread that recorded
     * @param held what that thread held, innermost first
     * @param providerKeys every key the provider held at that moment, by any holder
     */
    public record Recording(String thread, List<RecordedLock> held, Set<String> providerKeys) {

        @Override
        public String toString() {
            return "thread '" + thread + "' held " + (held.isEmpty() ? "no lock" : held.toString())
                    + " (the provider held " + providerKeys + ")";
        }
    }

    private final InMemoryLockProvider provider;
    private final List<Recording> recordings = new ArrayList<>();

    /**
     * @param provider the provider the application's locks are taken from (the test's {@code InMemoryLockProvider}
     * bean)
     */
    public LockRecorder(InMemoryLockProvider provider) {
        if (provider == null) {
            throw new IllegalArgumentException("LockRecorder(provider): the InMemoryLockProvider must not be null");
        }
        this.provider = provider;
    }

    /** Records what the calling thread holds now. */
    public void record() {
        Recording recording = provider.recordHeld(Thread.currentThread().getName(), LockContext.heldKeys());
        synchronized (recordings) {
            recordings.add(recording);
        }
    }

    /** Every recording so far, oldest first. */
    public List<Recording> recordings() {
        synchronized (recordings) {
            return List.copyOf(recordings);
        }
    }

    /** Forgets the recordings, to record another part of the test. */
    public void clear() {
        synchronized (recordings) {
            recordings.clear();
        }
    }

    /**
     * Fails unless the code recorded at least once and every recording held the lock of {@code fullKey} (prefix
     * included), still held by the provider (not lost). The failure says what was held instead.
     *
     * @return the checks of that lock's type and fencing
     */
    public RanUnder assertRanUnder(String fullKey) {
        List<Recording> runs = checkedRuns("run under the lock '" + fullKey + "'");
        List<RecordedLock> locks = new ArrayList<>();
        for (int i = 0; i < runs.size(); i++) {
            Recording run = runs.get(i);
            RecordedLock lock = run.held().stream().filter(held -> held.key().equals(fullKey)).findFirst().orElse(null);
            if (lock == null || lock.lost()) {
                throw new AssertionError("Expected the recorded code to run under the lock '" + fullKey
                        + "', but in run " + (i + 1) + " of " + runs.size() + " " + run
                        + ((lock == null) ? "" : ": its lease was lost")
                        + " (keys include distlock.key-prefix)");
            }
            locks.add(lock);
        }
        return new RanUnder(fullKey, locks, runs);
    }

    /** Fails unless the code recorded at least once and held no lock in any recording; says what it held. */
    public void assertRanWithoutLock() {
        List<Recording> runs = checkedRuns("run without a lock");
        for (int i = 0; i < runs.size(); i++) {
            if (!runs.get(i).held().isEmpty()) {
                throw new AssertionError("Expected the recorded code to run without a lock, but in run " + (i + 1)
                        + " of " + runs.size() + " " + runs.get(i));
            }
        }
    }

    private List<Recording> checkedRuns(String expected) {
        List<Recording> runs = recordings();
        if (runs.isEmpty()) {
            throw new AssertionError("Expected the recorded code to " + expected + ", but it never ran: record() was "
                    + "not called");
        }
        return runs;
    }

    /** The checks of the lock every recording held: its type and fencing. */
    public static final class RanUnder {

        private final String key;
        private final List<RecordedLock> locks;
        private final List<Recording> runs;

        RanUnder(String key, List<RecordedLock> locks, List<Recording> runs) {
            this.key = key;
            this.locks = locks;
            this.runs = runs;
        }

        /** Fails unless the lock was of {@code type} in every recording. */
        public RanUnder withType(LockType type) {
            for (int i = 0; i < locks.size(); i++) {
                if (locks.get(i).type() != type) {
                    throw failure("of type " + type, i);
                }
            }
            return this;
        }

        /** Fails unless the lock was fenced (carried a token) in every recording. */
        public RanUnder fenced() {
            for (int i = 0; i < locks.size(); i++) {
                if (!locks.get(i).fenced()) {
                    throw failure("fenced", i);
                }
            }
            return this;
        }

        /** Fails if the lock was fenced in any recording. */
        public RanUnder unfenced() {
            for (int i = 0; i < locks.size(); i++) {
                if (locks.get(i).fenced()) {
                    throw failure("unfenced", i);
                }
            }
            return this;
        }

        private AssertionError failure(String expected, int index) {
            return new AssertionError("Expected the recorded code to run under the lock '" + key + "' " + expected
                    + ", but in run " + (index + 1) + " of " + runs.size() + " it held " + locks.get(index) + "; "
                    + runs.get(index));
        }
    }
}

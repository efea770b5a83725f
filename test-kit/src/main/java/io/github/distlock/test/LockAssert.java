package io.github.distlock.test;

import java.time.Duration;
import java.util.List;
import java.util.Set;

import io.github.distlock.ActiveLock;
import io.github.distlock.LockActivity;
import io.github.distlock.LockContext;
import io.github.distlock.LockTemplate;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/**
 * Assertions about locks for users' tests, after ShedLock's {@code LockAssert}: "this code runs under lock X" (called
 * from inside the code, typically from a test double the locked method calls) and "no lock is held after the test".
 * Keys are full keys, prefix included ({@code lock:order:7} for {@code @DistributedLock(key = "'order:' + #id")} with
 * the default prefix). Failures are {@link AssertionError}s that say what was held instead. To check the type and
 * fencing as well, or to check from the test's own thread after the code ran, record with a {@link LockRecorder}.
 *
 * <pre>{@code
 * // a test double the service calls while it should hold the lock
 * PaymentGateway payments = (order, amount) -> LockAssert.assertLocked("lock:order:" + order);
 *
 * @AfterEach
 * void noLockLeftBehind() {
 *     LockAssert.assertNoLocksHeld(locks);   // the InMemoryLockProvider, or the LockTemplate
 * }
 * }</pre>
 */
public final class LockAssert {

    /** How long {@code assertNoLocksHeld} waits for releases that happen in the background (async callers). */
    public static final Duration RELEASE_GRACE = Duration.ofSeconds(5);

    private LockAssert() {
    }

    /** Fails unless the calling thread runs under some lock taken through the {@code LockTemplate}. */
    public static void assertLocked() {
        if (LockContext.heldKeys().isEmpty()) {
            throw new AssertionError("Expected to run under a distributed lock, but this thread ("
                    + Thread.currentThread().getName() + ") holds none");
        }
    }

    /**
     * Fails unless the calling thread runs under the lock of {@code fullKey} (prefix included), taken through the
     * {@code LockTemplate} by the call it is running in or by an outer one.
     */
    public static void assertLocked(String fullKey) {
        List<String> held = LockContext.heldKeys();
        if (!held.contains(fullKey)) {
            throw new AssertionError("Expected to run under the lock '" + fullKey + "', but this thread ("
                    + Thread.currentThread().getName() + ") holds " + (held.isEmpty() ? "no lock" : held)
                    + " (keys include distlock.key-prefix)");
        }
    }

    /** Fails if the calling thread runs under any lock. */
    public static void assertNotLocked() {
        List<String> held = LockContext.heldKeys();
        if (!held.isEmpty()) {
            throw new AssertionError("Expected to run without a lock, but this thread (" + Thread.currentThread().getName()
                    + ") holds " + held);
        }
    }

    /**
     * Fails unless {@code provider} holds no lock, after waiting up to {@link #RELEASE_GRACE} for releases still on
     * their way (a {@code CompletableFuture} method's lock is released when its future completes, possibly just after
     * the test's last line).
     */
    public static void assertNoLocksHeld(InMemoryLockProvider provider) {
        awaitEmpty(provider::lockedKeys, "InMemoryLockProvider");
    }

    /**
     * Fails unless {@code template} has no lock call in progress (held or waiting), after waiting up to
     * {@link #RELEASE_GRACE}. Works with any backend: the template keeps its calls in progress, which it shows as a
     * {@link LockActivity} (the auto-configured one does).
     *
     * @throws IllegalArgumentException when the template keeps no calls in progress (it is no {@link LockActivity})
     */
    public static void assertNoLocksHeld(LockTemplate template) {
        // one method for both: an overload taking LockActivity would be ambiguous for DefaultLockTemplate, which is both
        if (!(template instanceof LockActivity activity)) {
            throw new IllegalArgumentException("Only a LockTemplate that is a LockActivity (such as DefaultLockTemplate) "
                    + "keeps its calls in progress, got " + template);
        }
        awaitEmpty(() -> Set.copyOf(activity.activeLocks().stream().map(LockAssert::describe).toList()),
                "LockTemplate");
    }

    private static String describe(ActiveLock lock) {
        return lock.key() + (lock.held() ? " held by " : " waited for by ") + lock.name() + " on " + lock.thread();
    }

    private static void awaitEmpty(java.util.function.Supplier<Set<String>> held, String where) {
        try {
            Awaitility.await().pollInterval(Duration.ofMillis(10)).atMost(RELEASE_GRACE)
                    .until(() -> held.get().isEmpty());
        }
        catch (ConditionTimeoutException ex) {
            throw new AssertionError("Expected no lock to be held, but the " + where + " still has " + held.get()
                    + " after " + RELEASE_GRACE.toSeconds() + " s");
        }
    }
}

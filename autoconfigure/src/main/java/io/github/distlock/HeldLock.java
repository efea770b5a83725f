package io.github.distlock;

import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

/**
 * Locks taken by {@link LockTemplate#acquireAsync}, held until {@link #releaseAsync()}: for code whose work ends
 * later than the call that started it (a {@code CompletableFuture}, a {@code Mono}). Not re-entrant: a nested call on
 * one of its keys is another owner and waits like any other caller.
 */
public interface HeldLock {

    /** The full keys held, prefix included, in the order they were taken. */
    List<String> keys();

    /** The fencing token of the first key when the lock is fenced, otherwise empty. */
    OptionalLong fencingToken();

    /**
     * Whether this owner still holds every key, asked of the backend where it can tell cheaply (otherwise what
     * {@link #lostWhileHeld()} knows): for code that keeps a lock across calls and must check it before relying on it
     * again, as a nested call of {@link LockTemplate} does before it re-enters. The default trusts
     * {@link #lostWhileHeld()}.
     *
     * @throws RuntimeException when the backend fails
     */
    default boolean stillHeld() {
        return !lostWhileHeld();
    }

    /**
     * Whether the backend has already reported one of the keys lost while held (renewal stopped working, the key was
     * found gone), without asking it. Such a loss is also reported to the {@link LockListener}s.
     */
    default boolean lostWhileHeld() {
        return false;
    }

    /**
     * Registers code to run once, when the backend reports one of the keys lost while held (at once, on this thread,
     * when that already happened; otherwise on the backend's reporting thread): how work that holds the lock across
     * calls stops itself, as {@link LeaseLostPolicy#CANCEL} does for a {@code Mono} or {@code Flux}. Callbacks
     * registered before the loss all run, in order; keep them short and non-blocking.
     *
     * @param callback receives the loss, naming the key and how it was found
     */
    default void whenLost(java.util.function.Consumer<LockLeaseLostException> callback) {
    }

    /**
     * Releases every key, by this owner only, once (later calls return the same future). Never completes
     * exceptionally: a failure to release is logged and reported to listeners, and the lock expires by itself. With
     * {@link LockOptions#holdAtLeast()} the release happens in the background once that time is over; the future
     * completes when the release was made or scheduled.
     */
    CompletableFuture<Void> releaseAsync();
}

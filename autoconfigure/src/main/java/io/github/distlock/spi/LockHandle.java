package io.github.distlock.spi;

import java.util.function.Consumer;

/**
 * One acquired lock, held by the {@link LockOwner} of its request. Any thread may release it.
 */
public interface LockHandle {

    /** Token of a fenced acquisition, or of the latest {@link #newFencingToken()}; {@code -1} when none was issued. */
    long fencingToken();

    /**
     * Issues a fencing token for this held lock, higher than every token issued for its key before: for a nested fenced
     * call inside an unfenced one. {@link #fencingToken()} returns it afterwards.
     *
     * @return the token, or {@code -1} when the lock is no longer this owner's
     * @throws UnsupportedOperationException when the backend has no fencing tokens
     * @throws RuntimeException when the backend fails
     */
    default long newFencingToken() {
        throw new UnsupportedOperationException("this lock backend issues no fencing tokens");
    }

    /**
     * Releases the lock if this owner still holds it, without blocking. Safe to call from any thread, once.
     *
     * @return a future completed with {@code true} when released, {@code false} when the lock was no longer this
     * owner's (the lease ran out or renewal failed), in which case nothing is touched: another holder's lock is never
     * released; completed exceptionally when the backend failed: it then keeps trying in the background, and the lock
     * expires by itself within its lease in any case
     */
    java.util.concurrent.CompletableFuture<Boolean> releaseAsync();

    /**
     * {@link #releaseAsync()}, waiting for its outcome; not cut short by an interrupt the guarded code left behind.
     *
     * @return as {@link #releaseAsync()}
     * @throws RuntimeException when the backend failed
     */
    default boolean release() {
        try {
            return releaseAsync().join();
        }
        catch (java.util.concurrent.CompletionException ex) {
            throw (ex.getCause() instanceof RuntimeException cause) ? cause : ex;
        }
    }

    /**
     * Registers code to run (once, on a background thread) if the backend learns, while the lock is still held, that
     * it was lost: renewal stopped working or the key was found gone. A backend that cannot tell never calls it; a
     * loss is then only seen by {@link #release()}.
     *
     * @param callback receives a sentence saying how the loss was found
     */
    default void whenLost(Consumer<String> callback) {
    }

    /**
     * Whether this owner still holds the lock, asked when a nested call is about to re-enter it. The default trusts
     * what {@link #whenLost} has reported; a backend that can ask cheaply should ask.
     *
     * @throws RuntimeException when the backend fails
     */
    default boolean stillHeld() {
        return !lostWhileHeld();
    }

    /** Whether {@link #whenLost} has already reported this lock lost. */
    default boolean lostWhileHeld() {
        return false;
    }
}

package io.github.distlock.spi;

import java.util.concurrent.CompletableFuture;

import io.github.distlock.LockType;
import org.jspecify.annotations.Nullable;

/**
 * A lock backend. {@link io.github.distlock.LockTemplate} asks it for one lock per acquisition; the Redisson provider
 * is the default, and another backend plugs in by declaring a bean of this type.
 *
 * <p>Contract every backend must keep: at most one owner holds a key at a time; a lock is released only by its owner
 * (a release by another owner, or after the lock was lost, touches nothing); a released or expired lock can be taken
 * by the next caller; a lock whose holder died expires within its lease (or the renewal timeout). Re-entry is not the
 * backend's concern: every request comes with a new {@link LockOwner}, and nested calls are handled by the template.
 *
 * <p>Asynchronous at its core, so that reactive and future-returning callers never block; the template's blocking
 * calls wait on the returned future.
 */
public interface LockProvider {

    /**
     * Starts acquiring the lock {@code request} describes.
     *
     * @return a future completed with the held lock, with {@code null} when another owner kept the lock for the whole
     * wait, or exceptionally when the backend failed (the lock is then not held: a backend that may have taken it
     * anyway, say after a timeout, gives it back by itself). A caller that stops waiting (interrupted, cancelled)
     * must release whatever handle the future still completes with.
     */
    CompletableFuture<@Nullable LockHandle> acquire(LockRequest request);

    /**
     * Whether this backend can take locks of {@code type}, fenced or not. Asked at startup for every annotated method
     * (an unsupported combination fails the startup, naming the method) and by the template for every call. The
     * default: {@link LockType#REENTRANT}, unfenced.
     */
    default boolean supports(LockType type, boolean fenced) {
        return type == LockType.REENTRANT && !fenced;
    }

    /**
     * Whether this backend takes requests with more than one {@linkplain LockRequest#permits() permit} (a semaphore:
     * at most that many owners at once, each released by its owner, a dead owner's permit expiring within its lease).
     * Asked at startup for every annotated method with {@code permits > 1}. The default: no.
     */
    default boolean supportsPermits() {
        return false;
    }

    /**
     * Closes {@code key}: every acquisition of it waiting now, and every one asked for until {@link #reopenKey}, fails
     * at once with {@link io.github.distlock.LockKeyClosedException}; a holder keeps its lock until it releases it.
     * Kept by the backend (all instances see it) until reopened.
     *
     * @param key the full key, prefix included
     * @param reason what waiters are told, such as "sold out"
     * @return how many waiters queued in the backend were told (an estimate where the backend cannot count them)
     * @throws UnsupportedOperationException when the backend cannot close keys
     */
    default long closeKey(String key, String reason) {
        throw new UnsupportedOperationException(describe(this) + " cannot close lock keys");
    }

    /**
     * Reopens a key {@linkplain #closeKey closed} before; nothing happens when it is not closed.
     *
     * @throws UnsupportedOperationException when the backend cannot close keys
     */
    default void reopenKey(String key) {
        throw new UnsupportedOperationException(describe(this) + " cannot close lock keys");
    }

    /** A provider's class name for messages: the simple name, or the full one for an anonymous class. */
    private static String describe(LockProvider provider) {
        String simple = provider.getClass().getSimpleName();
        return simple.isEmpty() ? provider.getClass().getName() : simple;
    }
}

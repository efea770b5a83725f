package io.github.distlock;

/**
 * Code run while a lock is held. It may throw a checked exception of type {@code E}, which reaches the caller of
 * {@link LockTemplate} unchanged.
 *
 * @param <T> the result type
 * @param <E> the exception the code may throw ({@link RuntimeException} when it throws no checked exception)
 */
@FunctionalInterface
public interface LockCallback<T, E extends Throwable> {

    /** Runs the guarded code. */
    T doInLock() throws E;
}

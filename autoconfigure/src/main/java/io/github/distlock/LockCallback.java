package io.github.distlock;

import org.jspecify.annotations.Nullable;

/**
 * Code run while a lock is held. It may throw a checked exception of type {@code E}, which reaches the caller of
 * {@link LockTemplate} unchanged.
 *
 * @param <T> the result type; {@code null} is a result like any other
 * @param <E> the exception the code may throw ({@link RuntimeException} when it throws no checked exception)
 */
@FunctionalInterface
public interface LockCallback<T extends @Nullable Object, E extends Throwable> {

    /** Runs the guarded code. */
    T doInLock() throws E;
}

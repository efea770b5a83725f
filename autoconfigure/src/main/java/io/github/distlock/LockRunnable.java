package io.github.distlock;

/**
 * Code with no result run while a lock is held. It may throw a checked exception of type {@code E}, which reaches the
 * caller of {@link LockTemplate} unchanged.
 *
 * @param <E> the exception the code may throw ({@link RuntimeException} when it throws no checked exception)
 */
@FunctionalInterface
public interface LockRunnable<E extends Throwable> {

    /** Runs the guarded code. */
    void run() throws E;
}

package io.github.distlock;

import java.util.NoSuchElementException;

import org.jspecify.annotations.Nullable;

/**
 * The outcome of {@link LockTemplate#tryExecute}: either the lock was acquired and the code ran, giving {@link #value()},
 * or the lock was not acquired and the code did not run.
 *
 * @param acquired whether the lock was acquired (and so the code ran)
 * @param value the code's result; {@code null} when not acquired
 * @param <T> the result type
 */
public record LockResult<T extends @Nullable Object>(boolean acquired, @Nullable T value) {

    private static final LockResult<?> NOT_ACQUIRED = new LockResult<>(false, null);

    /** The result of a call that ran. */
    public static <T extends @Nullable Object> LockResult<T> of(@Nullable T value) {
        return new LockResult<>(true, value);
    }

    /** The result of a call whose lock was not acquired. */
    @SuppressWarnings("unchecked")
    public static <T extends @Nullable Object> LockResult<T> notAcquired() {
        return (LockResult<T>) NOT_ACQUIRED;
    }

    /** The value, or {@code other} when the lock was not acquired. */
    public @Nullable T orElse(@Nullable T other) {
        return acquired ? value : other;
    }

    /** The value; throws when the lock was not acquired. */
    public @Nullable T orElseThrow() {
        if (!acquired) {
            throw new NoSuchElementException("The lock was not acquired: the code did not run");
        }
        return value;
    }
}

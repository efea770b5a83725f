package io.github.distlock.idempotency;

/**
 * A call with this key was processed already, and its outcome cannot be replayed: its result could not be stored as
 * JSON (or read back as the method's return type), or it failed with an exception its configuration stores
 * ({@link Idempotent#storeFailureFor()}). The code did not run again.
 */
public class DuplicateRequestException extends IdempotencyException {

    private final String firstFailure;

    /**
     * @param key the idempotency key
     * @param message why the first call's outcome is not replayed
     * @param firstFailure the class name of the exception the first call failed with, or {@code null} when it
     * returned
     * @param cause what failed while reading the stored outcome, or {@code null}
     */
    public DuplicateRequestException(String key, String message, String firstFailure, Throwable cause) {
        super(key, message, cause);
        this.firstFailure = firstFailure;
    }

    /** The class name of the exception the first call failed with, or {@code null} when it returned normally. */
    public String getFirstFailure() {
        return firstFailure;
    }
}

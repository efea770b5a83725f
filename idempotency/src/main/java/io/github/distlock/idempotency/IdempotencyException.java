package io.github.distlock.idempotency;

/**
 * Base class of the exceptions {@link Idempotent} and {@link IdempotencyTemplate} throw instead of running a
 * duplicate. The guarded code did not run when one is thrown.
 */
public abstract class IdempotencyException extends RuntimeException {

    private final String key;

    protected IdempotencyException(String key, String message, Throwable cause) {
        super(message, cause);
        this.key = key;
    }

    /** The idempotency key as the call gave it (without any prefix). */
    public String getKey() {
        return key;
    }
}

package io.github.distlock;

import org.jspecify.annotations.Nullable;

/**
 * Base class of the exceptions distlock throws when a lock can't be had. The guarded code never ran when one is thrown.
 */
public abstract class DistributedLockException extends RuntimeException {

    private final String key;

    protected DistributedLockException(String key, String message, @Nullable Throwable cause) {
        super(message, cause);
        this.key = key;
    }

    /** The full key of the lock, prefix included. */
    public String getKey() {
        return key;
    }
}

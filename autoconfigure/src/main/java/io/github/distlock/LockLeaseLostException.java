package io.github.distlock;

import org.jspecify.annotations.Nullable;

/**
 * The lock of a running call was lost and its {@link LeaseLostPolicy} stopped the call's code (interrupted its
 * thread, cancelled its future, disposed its subscription). Thrown by the call (or failing its future or publisher)
 * when the stopped code ended with an exception: that exception is the cause. Unlike
 * {@link DistributedLockException}, the guarded code did run, part of the way.
 */
public class LockLeaseLostException extends RuntimeException {

    private final String key;
    private final String reason;

    /**
     * @param key the full key of the lost lock
     * @param reason how the backend found the loss
     * @param cause what the stopped code ended with, or {@code null}
     */
    public LockLeaseLostException(String key, String reason, @Nullable Throwable cause) {
        super("Lock '" + key + "' was lost while its code ran (" + reason + "), and the code was stopped", cause);
        this.key = key;
        this.reason = reason;
    }

    /** The full key of the lost lock, prefix included. */
    public String getKey() {
        return key;
    }

    /** How the backend found the loss. */
    public String getReason() {
        return reason;
    }
}

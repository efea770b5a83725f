package io.github.distlock.idempotency;

import java.time.Duration;

import io.github.distlock.spi.LockDurations;

/**
 * The first call with this key is still running: this duplicate was refused ({@link WhileRunning#REFUSE}) or waited
 * for it longer than its wait time ({@link WhileRunning#WAIT}). The code did not run; a later retry gets the first
 * call's result (or runs, if the first call failed).
 */
public class RequestInProgressException extends IdempotencyException {

    private final Duration waitTime;

    /**
     * @param key the idempotency key
     * @param waitTime how long the duplicate waited ({@link Duration#ZERO} when refused at once)
     * @param cause the lock acquisition failure behind it
     */
    public RequestInProgressException(String key, Duration waitTime, Throwable cause) {
        super(key, "A call with idempotency key '" + key + "' is still running" + (waitTime.isZero()
                ? "; this duplicate was refused"
                // saturating: a wait given as the largest Duration (waited up to FOR_EVER) has no long of ms
                : " after waiting " + LockDurations.ceilMillis(LockDurations.toNanos(waitTime)) + " ms for it")
                + ". Retry later for its result.", cause);
        this.waitTime = waitTime;
    }

    /** How long the duplicate waited. */
    public Duration getWaitTime() {
        return waitTime;
    }
}

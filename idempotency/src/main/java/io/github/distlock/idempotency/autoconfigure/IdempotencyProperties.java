package io.github.distlock.idempotency.autoconfigure;

import java.time.Duration;

import io.github.distlock.spi.LockDurations;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Defaults of {@link io.github.distlock.idempotency.Idempotent} calls. Checked when bound, so a value no call could use
 * fails the startup naming its property; "for ever" ({@code Long.MAX_VALUE} of any unit, the largest {@code Duration})
 * is kept as {@link LockDurations#FOR_EVER}, as the lock's own properties are.
 */
@ConfigurationProperties("distlock.idempotency")
public class IdempotencyProperties {

    /** How long a "done" mark (and the result it carries) lives when the annotation sets no ttl. */
    private Duration ttl = Duration.ofHours(24);

    /** How long a duplicate waits for a first call that is still running, when the annotation sets no waitTime. */
    private Duration waitTime = Duration.ofSeconds(30);

    /** The default lifetime of a mark, at most {@link LockDurations#FOR_EVER}. */
    public Duration getTtl() {
        return ttl;
    }

    /**
     * @param ttl at least 1 ms; longer than {@link LockDurations#FOR_EVER} is kept as {@code FOR_EVER}, since Redis
     * counts a mark's lifetime in milliseconds and a larger one would fail the mark's write after the call ran
     * @throws IllegalArgumentException naming {@code distlock.idempotency.ttl} when null, 0, negative or below 1 ms
     */
    public void setTtl(Duration ttl) {
        this.ttl = LockDurations.checkedPositive("distlock.idempotency.ttl", ttl);
    }

    /** The default wait of a duplicate for a running call, at most {@link LockDurations#FOR_EVER}. */
    public Duration getWaitTime() {
        return waitTime;
    }

    /**
     * @param waitTime 0 (refused at once) or at least 1 ms, as the lock's {@code distlock.wait-time}: the lock refuses
     * anything between, and would refuse it on every call; longer than {@link LockDurations#FOR_EVER} waits until the
     * running call ends
     * @throws IllegalArgumentException naming {@code distlock.idempotency.wait-time} when null, negative or below 1 ms
     */
    public void setWaitTime(Duration waitTime) {
        if (waitTime == null) {
            throw new IllegalArgumentException("distlock.idempotency.wait-time must be 0 or at least 1 ms, was null");
        }
        this.waitTime = LockDurations.checked("distlock.idempotency.wait-time", waitTime, "0");
    }
}

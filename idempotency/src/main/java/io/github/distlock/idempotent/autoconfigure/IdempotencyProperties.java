package io.github.distlock.idempotent.autoconfigure;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;

/** Defaults of {@link io.github.distlock.idempotent.Idempotent} calls. */
@ConfigurationProperties("distlock.idempotency")
public class IdempotencyProperties {

    /** How long a "done" mark (and the result it carries) lives when the annotation sets no ttl. */
    private Duration ttl = Duration.ofHours(24);

    /** How long a duplicate waits for a first call that is still running, when the annotation sets no waitTime. */
    private Duration waitTime = Duration.ofSeconds(30);

    public Duration getTtl() {
        return ttl;
    }

    public void setTtl(Duration ttl) {
        if (ttl == null || ttl.compareTo(Duration.ofMillis(1)) < 0) {
            throw new IllegalArgumentException("distlock.idempotency.ttl must be at least 1 ms, was " + ttl);
        }
        this.ttl = ttl;
    }

    public Duration getWaitTime() {
        return waitTime;
    }

    public void setWaitTime(Duration waitTime) {
        if (waitTime == null || waitTime.isNegative()) {
            throw new IllegalArgumentException("distlock.idempotency.wait-time must be 0 or positive, was " + waitTime);
        }
        this.waitTime = waitTime;
    }
}

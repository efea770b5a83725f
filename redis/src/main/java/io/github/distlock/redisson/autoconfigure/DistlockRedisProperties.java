package io.github.distlock.redisson.autoconfigure;

import java.time.Duration;

import io.github.distlock.spi.LockDurations;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The failure budget of a lock call and the start-up policy of the Redisson client distlock builds. The command
 * timeout is Spring Boot's {@code spring.data.redis.timeout}.
 */
@ConfigurationProperties(prefix = "distlock.redis")
public class DistlockRedisProperties {

    /**
     * How often a Redis command that could not be sent is tried again; unset: Redisson's default (4). Lock and
     * unlock scripts that were sent are never sent twice, so with retry-delay this bounds how long a call takes
     * against an unreachable Redis: measured ~2 s with 1 and 200ms, ~6-7 s with Redisson's defaults. It is also
     * how long a command waits for a free pooled connection under a burst: 1 x 200ms (and 2 x 500ms) failed
     * calls with "Unable to acquire connection" when 200 calls locked at once on a loaded 2-core machine, while
     * Redis was fine; Redisson's defaults did not. Lower it for fail-fast only if your bursts stay well below
     * the connection pool.
     */
    private @Nullable Integer retryAttempts;

    /** Pause between those attempts; unset: Redisson's default (1-2 s, jittered). */
    private @Nullable Duration retryDelay;

    /**
     * Whether the application must reach Redis to start. False (the default): the client connects on first use and
     * reconnects by itself, so an application started during a Redis outage runs, and its lock calls fail with
     * LockBackendException until Redis is back. True: the startup fails with a report when Redis is unreachable.
     */
    private boolean requireAtStartup = false;

    public @Nullable Integer getRetryAttempts() {
        return retryAttempts;
    }

    public void setRetryAttempts(@Nullable Integer retryAttempts) {
        if (retryAttempts != null && retryAttempts < 0) {
            throw new IllegalArgumentException("distlock.redis.retry-attempts must be 0 or more, was " + retryAttempts);
        }
        this.retryAttempts = retryAttempts;
    }

    public @Nullable Duration getRetryDelay() {
        return retryDelay;
    }

    public void setRetryDelay(@Nullable Duration retryDelay) {
        // Redisson counts the delay in milliseconds and waits it between attempts of every command: bounded so that
        // neither its conversion nor a call's wait can overflow
        this.retryDelay = (retryDelay != null) ? LockDurations.checkedBetween("distlock.redis.retry-delay",
                retryDelay, Duration.ZERO, Duration.ofMinutes(10)) : null;
    }

    public boolean isRequireAtStartup() {
        return requireAtStartup;
    }

    public void setRequireAtStartup(boolean requireAtStartup) {
        this.requireAtStartup = requireAtStartup;
    }
}

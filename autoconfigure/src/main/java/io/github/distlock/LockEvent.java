package io.github.distlock;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

/**
 * What happened to one lock, as {@link LockListener}s see it.
 *
 * @param key the full key, prefix included
 * @param waited how long the caller waited for the lock (until it got it or gave up); {@link Duration#ZERO} in events
 * about the hold (released, lease lost, release failed)
 * @param held how long the lock had been held when it was released or found lost; {@link Duration#ZERO} in events about
 * the wait (acquired, not acquired)
 * @param failure the backend error behind a failed acquisition or release; {@code null} otherwise
 */
public record LockEvent(String key, Duration waited, Duration held, @Nullable Throwable failure) {
}

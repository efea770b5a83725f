package io.github.distlock.spi;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

/**
 * One live hold of a lock as the backend sees it ({@link LockInspector#holders}); an owner holding a key in two ways
 * (a writer that re-entered as a reader) appears once per way.
 *
 * @param key the full key asked about
 * @param owner the backend's owner of the lock, such as Redisson's {@code <client id>:<owner id>}
 * @param instanceId the backend's identity of the instance that holds it (Redisson: the client id), or {@code null}
 * when the owner does not say
 * @param instance the instance behind {@code instanceId} as it {@linkplain LockInspector#announce announced} itself,
 * or {@code null} when it did not (or its entry expired: it may be dead, its lock living out its lease)
 * @param mode how it is held, in the backend's words: {@code exclusive}, {@code read}, {@code write},
 * {@code permit}
 * @param remaining how long this hold lives on if its holder stops renewing it (a reader's or a permit's own lease,
 * else the lock's time to live), or {@code null} when the backend has no expiry for it
 */
public record LockHolderInfo(String key, String owner, @Nullable String instanceId, @Nullable LockInstance instance,
        String mode, @Nullable Duration remaining) {
}

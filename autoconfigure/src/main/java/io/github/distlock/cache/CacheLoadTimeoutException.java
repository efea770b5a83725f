package io.github.distlock.cache;

import java.time.Duration;

import io.github.distlock.LockAcquisitionException;

/**
 * A missing cache entry was being loaded by another caller (on this or another instance) for the whole single-flight
 * wait ({@code distlock.cache.single-flight.wait-time}): this caller neither loaded it nor read it. Names the cache and
 * the entry's key; {@link #getKey()} is the lock's full key.
 */
public class CacheLoadTimeoutException extends LockAcquisitionException {

    private final String cacheName;

    private final String cacheKey;

    /**
     * @param cacheName the cache's name
     * @param cacheKey the entry's key in that cache
     * @param lockKey the full key of the entry's lock
     * @param waitTime how long the caller waited
     */
    public CacheLoadTimeoutException(String cacheName, Object cacheKey, String lockKey, Duration waitTime) {
        super(lockKey, waitTime, "Cache '" + cacheName + "', key '" + cacheKey + "': the entry was not loaded within "
                + "distlock.cache.single-flight.wait-time (" + waitTime.toMillis() + " ms); another caller has been "
                + "loading it under the lock '" + lockKey + "' all that time", null);
        this.cacheName = cacheName;
        this.cacheKey = String.valueOf(cacheKey);
    }

    /** The name of the cache whose entry was not loaded in time. */
    public String getCacheName() {
        return cacheName;
    }

    /** The key of the entry in its cache, as text ({@code String.valueOf}). */
    public String getCacheKey() {
        return cacheKey;
    }
}

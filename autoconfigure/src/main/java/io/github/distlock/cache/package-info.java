/**
 * Single-flight cache loading: with {@code distlock.cache.single-flight.enabled=true} every {@code CacheManager} bean's
 * caches load a missing entry under the entry's distributed lock ({@link io.github.distlock.cache.SingleFlightCache}),
 * so that {@code @Cacheable(sync = true)} loads it once across all instances sharing the cache.
 */
@NullMarked
package io.github.distlock.cache;

import org.jspecify.annotations.NullMarked;

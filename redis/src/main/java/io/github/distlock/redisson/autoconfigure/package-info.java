/**
 * Auto-configuration of the Redis backend ({@code distlock.backend=redis}): the application's
 * {@code RedissonClient}, or one built from Spring Boot's {@code spring.data.redis.*} settings and adjusted by
 * {@link io.github.distlock.redisson.autoconfigure.RedissonConfigCustomizer}s, and the {@code distlock.redis.*}
 * properties.
 */
@NullMarked
package io.github.distlock.redisson.autoconfigure;

import org.jspecify.annotations.NullMarked;

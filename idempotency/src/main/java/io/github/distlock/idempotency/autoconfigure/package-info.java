/**
 * Auto-configuration of idempotent calls on the core's {@code LockTemplate} and an {@code IdempotencyStore} (the
 * application's, or the Redis one on its {@code RedissonClient}), and the {@code distlock.idempotency.*}
 * properties.
 */
@NullMarked
package io.github.distlock.idempotency.autoconfigure;

import org.jspecify.annotations.NullMarked;

/**
 * The Redis lock backend, on Redisson: {@link io.github.distlock.redisson.RedissonLockProvider} with its reentrant,
 * read/write, fair hand-off and permit locks, fencing tokens, its inspector, and the monitor that notices lost
 * leases.
 */
@NullMarked
package io.github.distlock.redisson;

import org.jspecify.annotations.NullMarked;

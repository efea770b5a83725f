/**
 * The API an application uses: {@link io.github.distlock.DistributedLock} on a method, or
 * {@link io.github.distlock.LockTemplate} in code, with {@link io.github.distlock.LockOptions}, the lock types, what
 * the locked code can learn ({@link io.github.distlock.LockContext}), listeners, and the exceptions a lock call throws.
 * {@link io.github.distlock.DefaultLockTemplate} runs every call on the backend's
 * {@link io.github.distlock.spi.LockProvider}.
 */
@NullMarked
package io.github.distlock;

import org.jspecify.annotations.NullMarked;

/**
 * Spring Integration on distlock: {@link io.github.distlock.integration.DistlockLockRegistry}, a {@code LockRegistry}
 * whose locks are held in distlock's configured backend, for aggregators, {@code LockRequestHandlerAdvice} and leader
 * election with {@code LockRegistryLeaderInitiator}.
 */
@NullMarked
package io.github.distlock.integration;

import org.jspecify.annotations.NullMarked;

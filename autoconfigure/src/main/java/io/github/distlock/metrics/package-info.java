/**
 * Micrometer meters of lock calls: the {@code distlock.acquire} and {@code distlock.held} timers, recorded by a
 * {@link io.github.distlock.LockListener}.
 */
@NullMarked
package io.github.distlock.metrics;

import org.jspecify.annotations.NullMarked;

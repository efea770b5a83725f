/**
 * The lock backend SPI: what a backend implements ({@link io.github.distlock.spi.LockProvider} and its
 * {@link io.github.distlock.spi.LockHandle}s; optionally {@link io.github.distlock.spi.LockInspector}), what it is
 * asked ({@link io.github.distlock.spi.LockRequest} for a {@link io.github.distlock.spi.LockOwner}), and the one
 * conversion of durations every backend uses ({@link io.github.distlock.spi.LockDurations}).
 */
@NullMarked
package io.github.distlock.spi;

import org.jspecify.annotations.NullMarked;

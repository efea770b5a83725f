/**
 * Idempotent calls: {@link io.github.distlock.idempotency.Idempotent} on a method, or
 * {@link io.github.distlock.idempotency.IdempotencyTemplate} in code, runs a request once per key under a distlock
 * lock and replays its result to duplicates from a "done" mark in an
 * {@link io.github.distlock.idempotency.IdempotencyStore}.
 */
@NullMarked
package io.github.distlock.idempotency;

import org.jspecify.annotations.NullMarked;

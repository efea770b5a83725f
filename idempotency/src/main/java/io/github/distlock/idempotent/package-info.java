/**
 * Idempotent calls: {@link io.github.distlock.idempotent.Idempotent} on a method, or
 * {@link io.github.distlock.idempotent.IdempotencyTemplate} in code, runs a request once per key under a distlock
 * lock and replays its result to duplicates from a "done" mark in an
 * {@link io.github.distlock.idempotent.IdempotencyStore}.
 */
@NullMarked
package io.github.distlock.idempotent;

import org.jspecify.annotations.NullMarked;

/**
 * The AOP side of {@link io.github.distlock.DistributedLock}: the advisor and interceptor that run an annotated method
 * through {@link io.github.distlock.LockTemplate}, the parsing and caching of the annotation and its SpEL key
 * expression, the startup check of every annotated method, and the locking of {@code Mono}/{@code Flux} methods.
 */
@NullMarked
package io.github.distlock.aop;

import org.jspecify.annotations.NullMarked;

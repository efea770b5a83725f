/**
 * Ahead-of-time processing for native images: the reflection hints for distlock's own types and for the beans that
 * have {@link io.github.distlock.DistributedLock} methods.
 */
@NullMarked
package io.github.distlock.aot;

import org.jspecify.annotations.NullMarked;

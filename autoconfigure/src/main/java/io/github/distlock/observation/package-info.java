/**
 * The {@code distlock.lock} Micrometer observation, one per lock call over its wait and its hold: its context, its
 * outcome and the convention that names and tags it (a span when tracing, a timer for metrics).
 */
@NullMarked
package io.github.distlock.observation;

import org.jspecify.annotations.NullMarked;

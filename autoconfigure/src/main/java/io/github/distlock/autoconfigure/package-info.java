/**
 * Spring Boot auto-configuration of the core: the {@code distlock.*} properties, the template and the annotation
 * advisor on the lock backend chosen among the registered {@link io.github.distlock.autoconfigure.DistlockBackend}s
 * ({@code distlock.backend}), metrics, observation, the actuator endpoint and health, and the startup failure
 * report.
 */
@NullMarked
package io.github.distlock.autoconfigure;

import org.jspecify.annotations.NullMarked;

/**
 * Spring Boot Actuator support: the {@code distlock} endpoint (the locks held and the calls waiting here, who holds a
 * key on any instance, force release) and the {@code distlock} health indicator.
 */
@NullMarked
package io.github.distlock.actuate;

import org.jspecify.annotations.NullMarked;

/**
 * Auto-configuration of the distlock {@code LockRegistry} for Spring Integration, and the
 * {@code distlock.integration.*} properties.
 */
@NullMarked
package io.github.distlock.integration.autoconfigure;

import org.jspecify.annotations.NullMarked;

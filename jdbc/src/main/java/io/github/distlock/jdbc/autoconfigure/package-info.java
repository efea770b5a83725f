/**
 * Auto-configuration of the JDBC backend ({@code distlock.backend=jdbc}) on the application's
 * {@code DataSource}, and its {@code distlock.jdbc.*} properties.
 */
@NullMarked
package io.github.distlock.jdbc.autoconfigure;

import org.jspecify.annotations.NullMarked;

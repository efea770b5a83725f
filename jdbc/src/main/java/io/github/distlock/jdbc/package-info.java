/**
 * The JDBC lock backend: {@link io.github.distlock.jdbc.JdbcLockProvider}, locks as rows of one table in the
 * application's own database, with the table's schema scripts, and
 * {@link io.github.distlock.jdbc.JdbcBatchClaimer}, which shares the rows of a work table among instances.
 */
@NullMarked
package io.github.distlock.jdbc;

import org.jspecify.annotations.NullMarked;

package io.github.distlock.sample;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The three-instance flash sale with no Redis at all: one PostgreSQL holds the shop's tables and the locks
 * ({@code distlock.backend=jdbc}, table {@code distlock_lock}).
 */
class MultiInstanceJdbcTest extends MultiInstanceSale {

    @Override
    List<String> startLockBackend() {
        return List.of("--distlock.backend=jdbc", "--sample.embedded-redis.enabled=false",
                "--management.health.redis.enabled=false",
                // the test creates the table once, before the instances start
                "--distlock.jdbc.initialize-schema=never");
    }

    @Override
    void stopLockBackend() {
    }

    @Override
    SharedDatabase startDatabase() {
        try {
            EmbeddedPostgres postgres = EmbeddedPostgres.builder().setPort(0).start();
            return new SharedDatabase(postgres.getJdbcUrl("postgres", "postgres"), "postgres", "", postgres::close,
                    "io/github/distlock/jdbc/schema-postgresql.sql");
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Could not start PostgreSQL", ex);
        }
    }

    /**
     * The locks of the sale were rows of PostgreSQL — one per order and product key — and none is still held; no
     * instance started a Redis.
     */
    @Test
    void theLocksWereRowsInTheDatabaseAndNoneIsLeftHeld() throws Exception {
        acrossInstancesTheLocksAllowOneOrderPerUserAndProductAndNoOverselling();
        try (Connection connection = connect(); Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery("""
                        SELECT COUNT(*) FILTER (WHERE lock_key LIKE 'lock:order:%'),
                               COUNT(*) FILTER (WHERE lock_key LIKE 'lock:product:%'),
                               COUNT(*) FILTER (WHERE owner IS NOT NULL),
                               MAX(token) FILTER (WHERE lock_key LIKE 'lock:product:%')
                        FROM distlock_lock""")) {
            assertThat(rows.next()).isTrue();
            assertThat(rows.getLong(1)).as("order lock rows (one per user and product)").isGreaterThanOrEqualTo(400);
            assertThat(rows.getLong(2)).as("product lock rows").isGreaterThanOrEqualTo(2);
            assertThat(rows.getLong(3)).as("lock rows still held after the sale").isZero();
            assertThat(rows.getLong(4)).as("fencing token of a product lock").isPositive();
        }
        for (AppProcess app : apps()) {
            assertThat(Files.readString(app.log())).doesNotContain("embedded redis-server");
        }
    }

    /** The control: the same traffic without the locks, on the same PostgreSQL, goes wrong. */
    @Test
    void theSameTrafficOnTheUnsafeEndpointCreatesDuplicatesOrOversells() throws Exception {
        unsafeEndpointCreatesDuplicatesOrOversells();
    }

    /** Run by the test above, not on its own: the checks of the lock table follow the sale they look at. */
    @Override
    void acrossInstancesTheLocksAllowOneOrderPerUserAndProductAndNoOverselling() throws Exception {
        super.acrossInstancesTheLocksAllowOneOrderPerUserAndProductAndNoOverselling();
    }
}

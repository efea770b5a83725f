package io.github.distlock.jdbc.autoconfigure;

import java.util.List;
import java.util.Map;

import io.github.distlock.DistlockConfigurationException;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.jdbc.DatabaseAccess;
import io.github.distlock.jdbc.JdbcLockProvider;
import io.github.distlock.spi.LockProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code distlock.jdbc.initialize-schema} on a real PostgreSQL, which Spring Boot does not count as embedded: the
 * default leaves the schema alone (a missing table fails the startup, naming the script and the property);
 * {@code always} creates the table (schema-qualified names included) and is harmless when it exists.
 */
class JdbcSchemaInitializationTest {

    @RegisterExtension
    static final DatabaseAccess db = DatabaseAccess.postgres();

    private ApplicationContextRunner runner() {
        List<String> connection = db.connectionArguments();
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, AopAutoConfiguration.class,
                        DistlockJdbcAutoConfiguration.class, DistlockAutoConfiguration.class))
                .withPropertyValues("spring.datasource.url=" + connection.get(0),
                        "spring.datasource.username=" + connection.get(1),
                        "spring.datasource.password=" + connection.get(2));
    }

    @Test
    void byDefaultATableMissingFromAServerDatabaseFailsTheStartup() {
        runner().withPropertyValues("distlock.jdbc.table-name=never_created_locks").run(context -> {
            assertThat(context).hasFailed();
            DistlockConfigurationException failure = rootCause(context.getStartupFailure());
            assertThat(failure.getDescription()).contains("'never_created_locks'").contains("PostgreSQL");
            assertThat(failure.getAction()).contains("io/github/distlock/jdbc/schema-postgresql.sql")
                    .contains("distlock.jdbc.initialize-schema=always").contains("distlock.jdbc.table-name");
        });
        assertThat(tables("never_created_locks")).isEmpty();
    }

    @Test
    void alwaysCreatesTheTableAndItsIndexOnceAndLocksLiveInIt() {
        for (int start = 0; start < 2; start++) {
            runner().withPropertyValues("distlock.jdbc.initialize-schema=always", "distlock.jdbc.table-name=created_locks")
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context.getBean(LockProvider.class)).isInstanceOf(JdbcLockProvider.class);
                        String owner = context.getBean(LockTemplate.class).execute("k", LockOptions.DEFAULTS,
                                () -> (String) db.query("SELECT owner FROM created_locks WHERE lock_key = 'lock:k'")
                                        .get(0).get("owner"));
                        assertThat(owner).isNotNull();
                    });
        }
        assertThat(db.query("SELECT indexname FROM pg_indexes WHERE tablename = 'created_locks' ORDER BY indexname"))
                .extracting(row -> row.get("indexname")).containsExactly("created_locks_instance", "created_locks_pkey");
    }

    @Test
    void aSchemaQualifiedTableIsCreatedInItsSchema() {
        db.update("CREATE SCHEMA IF NOT EXISTS locking");
        runner().withPropertyValues("distlock.jdbc.initialize-schema=always", "distlock.jdbc.table-name=locking.app_locks")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    context.getBean(LockTemplate.class).run("k", LockOptions.DEFAULTS, () -> {
                    });
                });
        assertThat(db.query("SELECT schemaname, indexname FROM pg_indexes WHERE tablename = 'app_locks' ORDER BY indexname"))
                .extracting(row -> row.get("schemaname") + "." + row.get("indexname"))
                .containsExactly("locking.app_locks_instance", "locking.app_locks_pkey");
        assertThat(db.query("SELECT token FROM locking.app_locks WHERE lock_key = 'lock:k'")).hasSize(1);
        assertThat(db.query("SELECT schemaname, tablename FROM pg_tables WHERE tablename = 'app_locks_peers'"))
                .as("the table of instances, beside the lock table")
                .extracting(row -> row.get("schemaname") + "." + row.get("tablename"))
                .containsExactly("locking.app_locks_peers");
    }

    private static List<Map<String, Object>> tables(String name) {
        return db.query("SELECT tablename FROM pg_tables WHERE tablename = ?", name);
    }

    private static DistlockConfigurationException rootCause(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof DistlockConfigurationException found) {
                return found;
            }
        }
        throw new AssertionError("no DistlockConfigurationException in the startup failure", failure);
    }
}

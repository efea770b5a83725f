package io.github.distlock.jdbc.autoconfigure;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.UUID;

import javax.sql.DataSource;

import io.github.distlock.DistlockConfigurationException;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.autoconfigure.DistlockBackend;
import io.github.distlock.jdbc.JdbcLockProvider;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.test.InMemoryLockProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The jdbc backend's auto-configuration on Spring Boot's own DataSource (an in-memory H2 here; the schema options on
 * PostgreSQL are in {@link JdbcSchemaInitializationTest}).
 */
class DistlockJdbcAutoConfigurationTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, AopAutoConfiguration.class,
                    DistlockJdbcAutoConfiguration.class, DistlockAutoConfiguration.class))
            .withPropertyValues("spring.datasource.url=jdbc:h2:mem:autoconf-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1");

    @Test
    void anEmbeddedDatabaseGetsItsTableAndLocksLiveInIt() {
        runner.run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(DistlockBackend.class).toString())
                    .isEqualTo("jdbc (DataSource bean 'dataSource')");
            assertThat(context.getBean(LockProvider.class)).isInstanceOf(JdbcLockProvider.class);
            LockTemplate locks = context.getBean(LockTemplate.class);
            DataSource dataSource = context.getBean(DataSource.class);
            String owner = locks.execute("order-7", LockOptions.DEFAULTS,
                    () -> ownerOf(dataSource, "distlock_lock", "lock:order-7"));
            assertThat(owner).as("the row of the held lock").startsWith(
                    ((JdbcLockProvider) context.getBean(LockProvider.class)).instanceId() + ":");
            assertThat(ownerOf(dataSource, "distlock_lock", "lock:order-7")).as("after the call").isNull();
        });
    }

    @Test
    void aTableNameOfItsOwnIsCreatedAndUsed() {
        runner.withPropertyValues("distlock.jdbc.table-name=app_locks").run(context -> {
            assertThat(context).hasNotFailed();
            DataSource dataSource = context.getBean(DataSource.class);
            String owner = context.getBean(LockTemplate.class).execute("k", LockOptions.DEFAULTS,
                    () -> ownerOf(dataSource, "app_locks", "lock:k"));
            assertThat(owner).isNotNull();
        });
    }

    @Test
    void aMissingTableFailsTheStartupNamingTheScriptAndTheProperty() {
        runner.withPropertyValues("distlock.jdbc.initialize-schema=never").run(context -> {
            assertThat(context).hasFailed();
            DistlockConfigurationException failure = rootCause(context.getStartupFailure(),
                    DistlockConfigurationException.class);
            assertThat(failure.getDescription()).contains("'distlock_lock'").contains("missing");
            assertThat(failure.getAction()).contains("io/github/distlock/jdbc/schema-h2.sql")
                    .contains("distlock.jdbc.initialize-schema=always").contains("distlock.jdbc.table-name");
        });
    }

    @Test
    void anInvalidTableNameFailsTheStartupNamingTheProperty() {
        runner.withPropertyValues("distlock.jdbc.table-name=locks; drop table users").run(context -> {
            assertThat(context).hasFailed();
            assertThat(rootCause(context.getStartupFailure(), IllegalArgumentException.class))
                    .hasMessageContaining("distlock.jdbc.table-name").hasMessageContaining("locks; drop table users");
        });
    }

    /**
     * Names the backend's unquoted SQL cannot use fail the startup, not the first lock: a reserved word (a syntax error
     * in every statement), a table name whose index name {@code <table>_instance} exceeds 63 characters (PostgreSQL
     * truncates it, MySQL refuses more than 64).
     */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "order | uses the SQL reserved word 'order'",
            "locks.User | uses the SQL reserved word 'User'",
            "LOCK | uses the SQL reserved word 'LOCK'",
            "a_table_name_of_fifty_five_characters_is_one_too_long_x | may have at most 54 characters",
            "app.a_table_name_of_fifty_five_characters_is_one_too_long_x | index 'a_table_name_of_fifty_five_"})
    void aTableNameTheDatabaseCannotTakeFailsTheStartupNamingTheProperty(String name, String message) {
        runner.withPropertyValues("distlock.jdbc.table-name=" + name).run(context -> {
            assertThat(context).hasFailed();
            assertThat(rootCause(context.getStartupFailure(), IllegalArgumentException.class))
                    .hasMessageContaining("distlock.jdbc.table-name '" + name + "'").hasMessageContaining(message);
        });
    }

    @Test
    void theLongestTableNameIsCreatedAndUsed() {
        String name = "a_table_name_of_fifty_four_characters_is_just_right_xy";
        assertThat(name).hasSize(54);
        runner.withPropertyValues("distlock.jdbc.table-name=" + name).run(context -> {
            assertThat(context).hasNotFailed();
            String owner = context.getBean(LockTemplate.class).execute("long-table", LockOptions.DEFAULTS,
                    () -> ownerOf(context.getBean(DataSource.class), name, "lock:long-table"));
            assertThat(owner).startsWith(((JdbcLockProvider) context.getBean(LockProvider.class)).instanceId() + ":");
        });
    }

    @Test
    void postgresNotificationsAreOnByDefaultAndTurnedOffByTheirProperty() {
        runner.run(context -> assertThat(context.getBean(DistlockJdbcProperties.class)
                .toOptions(java.time.Duration.ofSeconds(30)).notifyReleases()).isTrue());
        runner.withPropertyValues("distlock.jdbc.notify.enabled=false").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(DistlockJdbcProperties.class).toOptions(java.time.Duration.ofSeconds(30))
                    .notifyReleases()).isFalse();
        });
    }

    @Test
    void pollIntervalsOutOfOrderFailTheStartupNamingTheProperty() {
        runner.withPropertyValues("distlock.jdbc.min-poll-interval=50ms", "distlock.jdbc.max-poll-interval=10ms")
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(rootCause(context.getStartupFailure(), IllegalArgumentException.class))
                            .hasMessageContaining("distlock.jdbc.max-poll-interval");
                });
    }

    @Test
    void theWatchdogTimeoutIsDistlocks() {
        runner.withPropertyValues("distlock.watchdog-timeout=2s").run(context -> {
            DataSource dataSource = context.getBean(DataSource.class);
            long[] leaseMicros = new long[1];
            context.getBean(LockTemplate.class).run("k", LockOptions.DEFAULTS, () -> leaseMicros[0] =
                    remainingMicros(dataSource, "lock:k"));
            assertThat(leaseMicros[0]).as("µs to the expiry of a watchdog lock just taken")
                    .isBetween(1_000_000L, 2_000_000L);
        });
    }

    @Test
    void backsOffWithoutSpringJdbc() {
        runner.withClassLoader(new FilteredClassLoader(TransactionAwareDataSourceProxy.class)).run(context -> {
            assertThat(context).doesNotHaveBean(DistlockBackend.class);
            assertThat(context).doesNotHaveBean(LockProvider.class);
        });
    }

    @Test
    void backsOffWithoutADataSource() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DistlockJdbcAutoConfiguration.class, DistlockAutoConfiguration.class))
                .run(context -> {
                    assertThat(context).doesNotHaveBean(DistlockBackend.class);
                    assertThat(context).doesNotHaveBean(LockProvider.class);
                });
    }

    @Test
    void backsOffForTheApplicationsOwnProvider() {
        runner.withBean(LockProvider.class, InMemoryLockProvider::new).run(context -> {
            assertThat(context).doesNotHaveBean(DistlockBackend.class);
            assertThat(context.getBean(LockProvider.class)).isInstanceOf(InMemoryLockProvider.class);
        });
    }

    @Test
    void anotherBackendBesideItFailsTheStartupUntilOneIsChosen() {
        ApplicationContextRunner two = runner.withBean("redisLockBackend", DistlockBackend.class,
                () -> new DistlockBackend("redis", "a test's second backend", InMemoryLockProvider::new));
        two.run(context -> {
            assertThat(context).hasFailed();
            assertThat(rootCause(context.getStartupFailure(), DistlockConfigurationException.class).getDescription())
                    .contains("jdbc (DataSource bean 'dataSource')").contains("redis (a test's second backend)");
        });
        two.withPropertyValues("distlock.backend=jdbc").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(LockProvider.class)).isInstanceOf(JdbcLockProvider.class);
        });
    }

    @Test
    void whenAnotherBackendIsChosenItTouchesNoDatabase() {
        runner.withPropertyValues("distlock.backend=redis", "distlock.jdbc.initialize-schema=always")
                .withBean("redisLockBackend", DistlockBackend.class,
                        () -> new DistlockBackend("redis", "a test's backend", InMemoryLockProvider::new))
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(LockProvider.class)).isInstanceOf(InMemoryLockProvider.class);
                    assertThat(tableExists(context.getBean(DataSource.class), "DISTLOCK_LOCK")).isFalse();
                });
    }

    private static <T extends Throwable> T rootCause(Throwable failure, Class<T> type) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (type.isInstance(cause)) {
                return type.cast(cause);
            }
        }
        throw new AssertionError("no " + type.getSimpleName() + " in the startup failure", failure);
    }

    private static String ownerOf(DataSource dataSource, String table, String key) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                ResultSet rows = connection.createStatement().executeQuery(
                        "SELECT owner FROM " + table + " WHERE lock_key = '" + key + "'")) {
            return rows.next() ? rows.getString(1) : null;
        }
    }

    private static long remainingMicros(DataSource dataSource, String key) {
        try (Connection connection = dataSource.getConnection();
                ResultSet rows = connection.createStatement().executeQuery("SELECT expires_at - CAST(EXTRACT(EPOCH FROM "
                        + "CURRENT_TIMESTAMP) * 1000000 AS BIGINT) FROM distlock_lock WHERE lock_key = '" + key + "'")) {
            assertThat(rows.next()).isTrue();
            return rows.getLong(1);
        }
        catch (SQLException ex) {
            throw new IllegalStateException(ex);
        }
    }

    private static boolean tableExists(DataSource dataSource, String table) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                ResultSet rows = connection.getMetaData().getTables(null, null, table, null)) {
            return rows.next();
        }
    }
}

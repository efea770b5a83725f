package io.github.distlock.jdbc;

import java.lang.reflect.Field;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.distlock.DistlockConfigurationException;
import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.jdbc.datasource.AbstractDataSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * On PostgreSQL the listener leaves the application's pool alone (its connection is its own where the pool says how to
 * open one, and one it borrowed goes back listening to nothing); a small pool another listener would exhaust is refused
 * at startup; the waiter line leaves no try behind a waiter that stopped waiting; and a remote waiter stays marked, and
 * so is woken by the release, however long the hold and the polls.
 */
class PostgresListenerAndWaiterLineTest {

    @RegisterExtension
    static final Database db = Database.postgres();

    private static final Duration POLL = Duration.ofSeconds(20);

    private static CompletableFuture<LockHandle> lock(JdbcLockProvider provider, String key, long waitNanos) {
        return provider.acquire(new LockRequest(key, waitNanos, 0, true, LockOwner.next()));
    }

    private static HikariDataSource pool(int size) {
        HikariDataSource shared = (HikariDataSource) db.dataSource();
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(shared.getJdbcUrl());
        config.setUsername(shared.getUsername());
        config.setPassword(shared.getPassword());
        config.setMaximumPoolSize(size);
        config.setConnectionTimeout(2000);
        return new HikariDataSource(config);
    }

    @Test
    void aHikariPoolOfOneTakesLocksWhileTheListenerListens() throws Exception {
        try (HikariDataSource pool = pool(1); JdbcLockProvider provider = new JdbcLockProvider(pool)) {
            await().atMost(Duration.ofSeconds(10)).until(() -> provider.listener().listening());
            LockHandle held = lock(provider, "pool-of-one", 0).get(10, TimeUnit.SECONDS);
            assertThat(held).isNotNull();
            assertThat(held.releaseAsync().get(10, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    void aHikariPoolOfTwoTakesLocksWhileACallerHoldsOneInATransaction() throws Exception {
        try (HikariDataSource pool = pool(2); JdbcLockProvider provider = new JdbcLockProvider(pool)) {
            await().atMost(Duration.ofSeconds(10)).until(() -> provider.listener().listening());
            try (Connection callersTransaction = pool.getConnection()) {
                callersTransaction.setAutoCommit(false);
                LockHandle held = lock(provider, "pool-of-two", 0).get(10, TimeUnit.SECONDS);
                assertThat(held).isNotNull();
                assertThat(held.releaseAsync().get(10, TimeUnit.SECONDS)).isTrue();
                callersTransaction.rollback();
            }
        }
    }

    @Test
    void anotherPoolWhoseMaximumLeavesTheLocksNoConnectionIsRefusedAtStartupNamingTheProperty() {
        try (HikariDataSource pool = pool(2)) {
            assertThatThrownBy(() -> new JdbcLockProvider(new OtherPool(pool, 2)))
                    .isInstanceOf(DistlockConfigurationException.class)
                    .hasMessageContaining("has at most 2")
                    .satisfies(ex -> assertThat(((DistlockConfigurationException) ex).getAction())
                            .contains("distlock.jdbc.notify.enabled=false").contains("at least 3"));
            // without the listener the same pool serves
            try (JdbcLockProvider provider = new JdbcLockProvider(new OtherPool(pool, 2),
                    JdbcLockOptions.defaults().withNotifyReleases(false))) {
                assertThat(provider.listener()).isNull();
            }
        }
    }

    @Test
    void aConnectionBorrowedFromAnotherPoolGoesBackListeningToNothing() throws Exception {
        try (HikariDataSource pool = pool(1)) {
            String channel;
            try (JdbcLockProvider provider = new JdbcLockProvider(new OtherPool(pool, 0))) {
                await().atMost(Duration.ofSeconds(10)).until(() -> provider.listener().listening());
                channel = provider.listener().channelName();
            }
            // the pool's only connection: the listener's, once it gave it back (within its quarter-second wait)
            try (Connection borrowed = pool.getConnection()) {
                assertThat(listeningChannels(borrowed)).as("channels of " + channel).isEmpty();
            }
        }
    }

    private static List<String> listeningChannels(DataSource dataSource) throws SQLException {
        try (Connection connection = dataSource.getConnection()) {
            return listeningChannels(connection);
        }
    }

    private static List<String> listeningChannels(Connection connection) throws SQLException {
        List<String> channels = new ArrayList<>();
        try (Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery("SELECT pg_listening_channels()")) {
            while (rows.next()) {
                channels.add(rows.getString(1));
            }
        }
        return channels;
    }

    @Test
    void queuedWaitersThatStopWaitingLeaveNoTryQueued() throws Exception {
        try (JdbcLockProvider provider = new JdbcLockProvider(db.dataSource(),
                JdbcLockOptions.defaults().withNotifyReleases(false))) {
            String key = "cancelled-behind";
            LockHandle held = lock(provider, key, 0).get(10, TimeUnit.SECONDS);
            List<CompletableFuture<LockHandle>> waiting = new ArrayList<>();
            for (int i = 0; i < 500; i++) {
                waiting.add(lock(provider, key, LockDurations.FOR_EVER_NANOS));
            }
            assertThat(provider.waiters().waiting(key)).isEqualTo(500);
            // the callers behind the first stop waiting (timed out upstream, interrupted); the first still waits
            waiting.subList(1, waiting.size()).forEach(future -> future.cancel(false));
            assertThat(provider.waiters().waiting(key)).isEqualTo(1);
            // the first's next poll, at most
            assertThat(workerQueue(provider).size()).isLessThanOrEqualTo(1);
            assertThat(held.releaseAsync().get(10, TimeUnit.SECONDS)).isTrue();
            assertThat(waiting.get(0).get(10, TimeUnit.SECONDS).releaseAsync().get(10, TimeUnit.SECONDS)).isTrue();
            assertThat(provider.waiters().waiting(key)).isZero();
            await().atMost(Duration.ofSeconds(5)).until(() -> workerQueue(provider).isEmpty());
        }
    }

    private static java.util.concurrent.BlockingQueue<Runnable> workerQueue(JdbcLockProvider provider)
            throws ReflectiveOperationException {
        Field workersField = JdbcLockProvider.class.getDeclaredField("workers");
        workersField.setAccessible(true);
        Field executorField = JdbcWorkers.class.getDeclaredField("workers");
        executorField.setAccessible(true);
        return ((ScheduledThreadPoolExecutor) executorField.get(workersField.get(provider))).getQueue();
    }

    @Test
    void aRemoteWaiterStaysMarkedThroughAHoldLongerThanTheMarkAndIsWokenByTheRelease() throws Exception {
        JdbcLockOptions options = JdbcLockOptions.defaults().withPollIntervals(POLL, POLL);
        // marks that lapse after 1 s instead of 5, so that the hold outlasts one quickly
        long mark = TimeUnit.SECONDS.toNanos(1);
        try (JdbcLockProvider holder = new JdbcLockProvider(db.dataSource(), options, new JdbcWaiters(mark));
                JdbcLockProvider waiter = new JdbcLockProvider(db.dataSource(), options, new JdbcWaiters(mark))) {
            String key = "outlasts-the-mark";
            await().atMost(Duration.ofSeconds(10)).until(() -> waiter.listener().listening()
                    && holder.listener().listening());
            LockHandle held = lock(holder, key, 0).get(10, TimeUnit.SECONDS);
            long heldAt = System.nanoTime();
            CompletableFuture<LockHandle> waiting = lock(waiter, key, TimeUnit.SECONDS.toNanos(60));
            await().atMost(Duration.ofSeconds(10)).until(() -> holder.waiters().remoteWaiters(key));
            // past the first mark's life, and then some: still marked, renewed by the waiter's tries
            await().pollDelay(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(5))
                    .until(() -> holder.waiters().remoteWaiters(key));
            assertThat(System.nanoTime() - heldAt).isGreaterThan(mark);
            assertThat(waiting).isNotDone();
            assertThat(held.releaseAsync().get(10, TimeUnit.SECONDS)).isTrue();
            waiting.get(3, TimeUnit.SECONDS).releaseAsync().get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aForceReleaseWakesThisInstancesNextWaiterLongBeforeItsPoll() throws Exception {
        try (JdbcLockProvider provider = new JdbcLockProvider(db.dataSource(),
                JdbcLockOptions.defaults().withPollIntervals(POLL, POLL).withNotifyReleases(false))) {
            String key = "force-released";
            LockHandle held = lock(provider, key, 0).get(10, TimeUnit.SECONDS);
            CompletableFuture<LockHandle> waiting = lock(provider, key, TimeUnit.SECONDS.toNanos(60));
            await().atMost(Duration.ofSeconds(5)).until(() -> provider.waiters().waiting(key) == 1);
            assertThat(provider.forceRelease(key)).hasSize(1);
            assertThat(waiting.get(3, TimeUnit.SECONDS).releaseAsync().get(10, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    void theTableNamedWithOrWithoutItsSchemaHasOneChannel() throws Exception {
        JdbcLockOptions quiet = JdbcLockOptions.defaults().withNotifyReleases(false);
        try (JdbcLockProvider plain = new JdbcLockProvider(db.dataSource(), quiet);
                JdbcLockProvider qualified = new JdbcLockProvider(db.dataSource(),
                        quiet.withTableName("PUBLIC." + JdbcLockOptions.DEFAULT_TABLE_NAME))) {
            assertThat(qualified.tableName()).isNotEqualTo(plain.tableName());
            assertThat(JdbcLockRepository.channel("public." + JdbcLockOptions.DEFAULT_TABLE_NAME))
                    .isEqualTo(channel(plain)).isEqualTo(channel(qualified))
                    .isNotEqualTo(JdbcLockRepository.channel(JdbcLockOptions.DEFAULT_TABLE_NAME));
        }
    }

    private static String channel(JdbcLockProvider provider) throws ReflectiveOperationException {
        Field repository = JdbcLockProvider.class.getDeclaredField("repository");
        repository.setAccessible(true);
        return ((JdbcLockRepository) repository.get(provider)).channel();
    }

    @Test
    void aKeyWithSeparatorsSurrogatesAndTheLongestLengthIsWokenAcrossInstances() throws Exception {
        StringBuilder key = new StringBuilder("k:|w|r:\u00e9\uD83D\uDE00 ");
        while (key.length() < JdbcLockProvider.MAX_KEY_LENGTH) {
            key.append('\u4e2d');
        }
        JdbcLockOptions options = JdbcLockOptions.defaults().withPollIntervals(POLL, POLL);
        try (JdbcLockProvider holder = new JdbcLockProvider(db.dataSource(), options);
                JdbcLockProvider waiter = new JdbcLockProvider(db.dataSource(), options)) {
            await().atMost(Duration.ofSeconds(10)).until(() -> waiter.listener().listening()
                    && holder.listener().listening());
            LockHandle held = lock(holder, key.toString(), 0).get(10, TimeUnit.SECONDS);
            CompletableFuture<LockHandle> waiting = lock(waiter, key.toString(), TimeUnit.SECONDS.toNanos(60));
            await().atMost(Duration.ofSeconds(10)).until(() -> holder.waiters().remoteWaiters(key.toString()));
            assertThat(held.releaseAsync().get(10, TimeUnit.SECONDS)).isTrue();
            waiting.get(3, TimeUnit.SECONDS).releaseAsync().get(10, TimeUnit.SECONDS);
        }
    }

    /**
     * A pool other than HikariCP (hidden behind a plain DataSource): the listener borrows one of its connections;
     * {@code maximum}, when positive, is what it says its maximum size is, as DBCP's {@code getMaxTotal} does.
     */
    public static final class OtherPool extends AbstractDataSource {

        private final DataSource pool;
        private final int maximum;

        OtherPool(DataSource pool, int maximum) {
            this.pool = pool;
            this.maximum = maximum;
        }

        public int getMaxTotal() {
            return maximum;
        }

        @Override
        public Connection getConnection() throws SQLException {
            return pool.getConnection();
        }

        @Override
        public Connection getConnection(String username, String password) throws SQLException {
            return pool.getConnection(username, password);
        }
    }
}

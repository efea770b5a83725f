package io.github.distlock.jdbc;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The lock's statements never run in the caller's transaction: its rollback does not undo an acquisition (nor a
 * fencing token issued inside it), and while it is open the lock row is neither locked by it nor waiting for its
 * commit. Checked with the DataSource as Spring Boot makes it and behind a {@link TransactionAwareDataSourceProxy}
 * (whose connections join the caller's transaction on the caller's thread: the provider unwraps it), on H2 and on
 * PostgreSQL, where a row locked by an open transaction makes every other writer wait.
 */
class CallerTransactionTest {

    @RegisterExtension
    static final Database h2 = Database.h2();

    @RegisterExtension
    static final Database postgres = Database.postgres();

    private static final Duration PROMPT = Duration.ofSeconds(5);

    @BeforeAll
    static void callerTables() {
        for (Database db : new Database[] {h2, postgres}) {
            db.update("CREATE TABLE IF NOT EXISTS caller_work (id INT NOT NULL)");
        }
    }

    @AfterAll
    static void dropCallerTables() {
        for (Database db : new Database[] {h2, postgres}) {
            db.update("DROP TABLE caller_work");
        }
    }

    private static Database database(String kind) {
        return kind.equals("H2") ? h2 : postgres;
    }

    private static DataSource callerDataSource(Database db, boolean proxied) {
        return proxied ? new TransactionAwareDataSourceProxy(db.dataSource()) : db.dataSource();
    }

    @ParameterizedTest(name = "{0}, proxied: {1}")
    @CsvSource({"H2, false", "H2, true", "POSTGRESQL, false", "POSTGRESQL, true"})
    void aCallersRollbackUndoesNeitherTheAcquisitionNorItsToken(String kind, boolean proxied) throws Exception {
        Database db = database(kind);
        DataSource dataSource = callerDataSource(db, proxied);
        String key = "tx:rollback:" + kind + ":" + proxied + ":" + System.nanoTime();
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        TransactionTemplate transaction = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
        try (JdbcLockProvider provider = new JdbcLockProvider(dataSource, JdbcLockProviderContract.options());
                JdbcLockProvider other = new JdbcLockProvider(db.dataSource(), JdbcLockProviderContract.options())) {
            long[] issued = new long[1];
            LockHandle handle = transaction.execute(status -> {
                jdbc.update("INSERT INTO caller_work (id) VALUES (1)");
                LockHandle held = provider.acquire(new LockRequest(key, 0, 0, true, LockOwner.next())).join();
                assertThat(held).isNotNull();
                // statements on the caller's thread: with the proxy not unwrapped, they would join this transaction
                issued[0] = held.newFencingToken();
                assertThat(held.stillHeld()).isTrue();
                // the transaction is still open: the lock's row must not be locked by it
                assertThat(tryOnce(other, key)).as("another instance's try while the transaction is open").isNull();
                status.setRollbackOnly();
                return held;
            });
            assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM caller_work WHERE id = 1", Integer.class))
                    .as("the caller's own work, rolled back").isZero();
            Map<String, Object> row = db.lockRow(key);
            assertThat(row.get("owner")).as("owner of the lock row after the caller's rollback")
                    .isEqualTo(provider.instanceId() + ":" + row.get("owner").toString().split(":")[1]);
            assertThat(row.get("owner").toString()).startsWith(provider.instanceId());
            assertThat(((Number) row.get("token")).longValue()).as("token issued inside the rolled back transaction")
                    .isEqualTo(issued[0]);
            assertThat(tryOnce(other, key)).as("another instance's try after the rollback").isNull();
            assertThat(handle.release()).isTrue();
        }
    }

    @ParameterizedTest(name = "{0}, proxied: {1}")
    @CsvSource({"H2, false", "H2, true", "POSTGRESQL, false", "POSTGRESQL, true"})
    void aReleaseInsideAnOpenTransactionFreesTheLockAtOnce(String kind, boolean proxied) throws Exception {
        Database db = database(kind);
        DataSource dataSource = callerDataSource(db, proxied);
        String key = "tx:release:" + kind + ":" + proxied + ":" + System.nanoTime();
        TransactionTemplate transaction = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        try (JdbcLockProvider provider = new JdbcLockProvider(dataSource, JdbcLockProviderContract.options());
                JdbcLockProvider other = new JdbcLockProvider(db.dataSource(), JdbcLockProviderContract.options())) {
            int id = java.util.concurrent.ThreadLocalRandom.current().nextInt(1_000_000_000);
            transaction.executeWithoutResult(status -> {
                jdbc.update("INSERT INTO caller_work (id) VALUES (?)", id);
                LockHandle held = provider.acquire(new LockRequest(key, 0, 0, true, LockOwner.next())).join();
                held.newFencingToken();
                assertThat(held.release()).isTrue();
                // still inside the transaction: the next holder does not wait for its commit
                LockHandle next = tryOnce(other, key);
                assertThat(next).as("another instance, right after the release, before the caller commits").isNotNull();
                assertThat(next.release()).isTrue();
            });
            assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM caller_work WHERE id = ?", Integer.class, id))
                    .as("the caller's own work, committed").isOne();
        }
    }

    /**
     * A DataSource that hands the caller's transactional connection to the caller's thread, and that the provider
     * cannot unwrap (here a {@link TransactionAwareDataSourceProxy} inside another wrapper; a routing DataSource keyed
     * by a thread-local would do the same): every statement of the lock, {@code newFencingToken()} and
     * {@code stillHeld()} included, runs on the provider's threads, so none joins (or commits) the caller's
     * transaction.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"H2", "POSTGRESQL"})
    void aThreadBoundDataSourceTheProviderCannotUnwrapNeverJoinsTheCallersTransaction(String kind) {
        Database db = database(kind);
        FaultyDataSource recording = new FaultyDataSource(
                new DelegatingDataSource(new TransactionAwareDataSourceProxy(db.dataSource())));
        String key = "tx:thread-bound:" + kind + ":" + System.nanoTime();
        TransactionTemplate transaction = new TransactionTemplate(new DataSourceTransactionManager(db.dataSource()));
        JdbcTemplate jdbc = new JdbcTemplate(db.dataSource());
        try (JdbcLockProvider provider = new JdbcLockProvider(recording.dataSource(),
                JdbcLockProviderContract.options())) {
            int started = recording.connectingThreads().size();
            int id = java.util.concurrent.ThreadLocalRandom.current().nextInt(1_000_000_000);
            LockHandle handle = transaction.execute(status -> {
                jdbc.update("INSERT INTO caller_work (id) VALUES (?)", id);
                LockHandle held = provider.acquire(new LockRequest(key, 0, 0, true, LockOwner.next())).join();
                long first = held.fencingToken();
                assertThat(held.newFencingToken()).isGreaterThan(first);
                assertThat(held.stillHeld()).isTrue();
                status.setRollbackOnly();
                return held;
            });
            assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM caller_work WHERE id = ?", Integer.class, id))
                    .as("the caller's own work, rolled back (a lock statement on its connection would have committed "
                            + "it)").isZero();
            assertThat(recording.connectingThreads().subList(started, recording.connectingThreads().size()))
                    .as("threads that took the lock's connections").isNotEmpty()
                    .allMatch(thread -> thread.startsWith("distlock-jdbc-"));
            assertThat(handle.release()).isTrue();
        }
    }

    /** One try by another instance, which must answer promptly: a row locked by the caller would make it wait. */
    private static LockHandle tryOnce(JdbcLockProvider provider, String key) {
        CompletableFuture<LockHandle> attempt = provider.acquire(new LockRequest(key, 0, 0, false, LockOwner.next()));
        try {
            return attempt.get(PROMPT.toMillis(), TimeUnit.MILLISECONDS);
        }
        catch (java.util.concurrent.TimeoutException ex) {
            throw new AssertionError("a try of " + key + " did not answer within " + PROMPT
                    + ": it waits for the caller's transaction", ex);
        }
        catch (Exception ex) {
            throw new AssertionError(ex);
        }
    }
}

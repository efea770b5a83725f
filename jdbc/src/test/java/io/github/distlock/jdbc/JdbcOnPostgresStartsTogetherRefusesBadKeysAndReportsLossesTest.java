package io.github.distlock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The jdbc backend on a real PostgreSQL: instances that create the schema together all start, a key the database cannot
 * store fails as the caller's mistake, and a lock taken behind its holder's back is reported lost. Each test states the
 * behaviour a user relies on.
 */
class JdbcOnPostgresStartsTogetherRefusesBadKeysAndReportsLossesTest {

    @RegisterExtension
    static final Database db = Database.postgres();

    /**
     * Three instances starting together with distlock.jdbc.initialize-schema=always run CREATE TABLE IF NOT EXISTS
     * (and CREATE INDEX IF NOT EXISTS) at the same moment. PostgreSQL's IF NOT EXISTS is not safe against a concurrent
     * creation of the same name (it checks the catalog before the other's insert is committed, then fails on the
     * catalog's unique index): one of the instances fails its startup.
     */
    @Test
    void threeInstancesCreatingTheTableTogetherAllStart() throws Exception {
        ExecutorService instances = Executors.newFixedThreadPool(3);
        List<Throwable> failures = new ArrayList<>();
        try {
            for (int round = 0; round < 15 && failures.isEmpty(); round++) {
                String table = "race_" + round + "_" + (System.nanoTime() % 100000);
                CyclicBarrier start = new CyclicBarrier(3);
                List<Future<?>> started = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    started.add(instances.submit(() -> {
                        start.await();
                        JdbcLockSchema.create(db.dataSource(), table);
                        return null;
                    }));
                }
                for (Future<?> instance : started) {
                    try {
                        instance.get(30, TimeUnit.SECONDS);
                    }
                    catch (java.util.concurrent.ExecutionException ex) {
                        failures.add(ex.getCause());
                    }
                }
            }
        }
        finally {
            instances.shutdownNow();
        }
        failures.forEach(failure -> System.out.println("schema race: " + failure + " / cause: " + failure.getCause()));
        assertThat(failures).isEmpty();
    }

    /**
     * A key PostgreSQL cannot store (a NUL character: "invalid byte sequence for encoding UTF8: 0x00") is the caller's
     * mistake: it should fail at once with an IllegalArgumentException naming the key (as a too-long key does), and it
     * must not leave a give-back behind that can never succeed. A watchdog acquisition's failure must not schedule a
     * give-back retried every period for as long as the provider lives (its release statement would fail with the same
     * error every time): one more statement every 50 ms here, every second by default, per call.
     */
    @Test
    void aKeyTheDatabaseCannotStoreFailsAsTheCallersMistakeAndLeavesNoEndlessRetries() {
        CountingDataSource counting = new CountingDataSource(db.dataSource());
        try (JdbcLockProvider provider = new JdbcLockProvider(counting.dataSource(),
                JdbcLockOptions.defaults().withWatchdogTimeout(Duration.ofMillis(300)))) {
            String key = "nul\u0000key";
            CompletableFuture<LockHandle>[] acquisition = new CompletableFuture[1];
            Throwable thrown = null;
            try {
                acquisition[0] = provider.acquire(new LockRequest(key, 0, 0, false, LockType.REENTRANT, LockOwner.next()));
                acquisition[0].join();
            }
            catch (RuntimeException ex) {
                thrown = ex;
            }
            String release = "UPDATE distlock_lock SET owner = NULL";
            // give any background give-back a chance to show itself (period 50 ms for this watchdog timeout)
            await().pollDelay(Duration.ofMillis(600)).atMost(Duration.ofSeconds(2)).until(() -> true);
            int releases = counting.count(release);
            System.out.println("give-back statements for a key PostgreSQL rejects, in 600 ms: " + releases
                    + "; acquisition: " + thrown);
            assertThat(releases).as("give-back statements retried for a key that can never be written").isLessThan(3);
            assertThat(thrown).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Lock key");
        }
    }

    /**
     * The batched renewal decides "all renewed" when its row count equals the number of watched locks. A row of this
     * instance that is live but no longer watched (a release still waiting for a worker: here the only worker is
     * blocked behind a row lock an open transaction holds, as it would be behind a slow statement or a pool without a
     * free connection) makes up for a watched lock whose row was taken behind its back: that loss is not reported,
     * and the holder's renewal time keeps being refreshed, for as long as the release waits.
     */
    @Test
    void aLockTakenBehindItsBackIsReportedLostWhileAnotherLockOfTheInstanceAwaitsItsRelease() throws Exception {
        String prefix = "review:renew:" + System.nanoTime() + ":";
        String blocked = prefix + "blocked";
        db.update("INSERT INTO distlock_lock (lock_key, owner, instance, expires_at, token) VALUES (?, NULL, NULL, 0, 1)",
                blocked);
        try (JdbcLockProvider provider = new JdbcLockProvider(db.dataSource(),
                JdbcLockOptions.defaults().withWatchdogTimeout(Duration.ofMillis(600)).withThreads(1));
                Connection blocker = db.dataSource().getConnection()) {
            LockHandle a = provider.acquire(new LockRequest(prefix + "a", 0, 0, false, LockOwner.next())).join();
            LockHandle b = provider.acquire(new LockRequest(prefix + "b", 0, 0, false, LockOwner.next())).join();
            assertThat(a).isNotNull();
            assertThat(b).isNotNull();
            CountDownLatch lost = new CountDownLatch(1);
            b.whenLost(reason -> lost.countDown());

            // an open transaction locks a row: the provider's only worker waits behind it with the next statement
            blocker.setAutoCommit(false);
            try (PreparedStatement lock = blocker.prepareStatement(
                    "SELECT * FROM distlock_lock WHERE lock_key = ? FOR UPDATE")) {
                lock.setString(1, blocked);
                lock.executeQuery().close();
            }
            CompletableFuture<LockHandle> stuck = provider.acquire(
                    new LockRequest(blocked, 0, TimeUnit.SECONDS.toNanos(5), false, LockOwner.next()));
            CompletableFuture<Boolean> releaseOfA = a.releaseAsync();

            // b's row is taken from it behind its back (as after a failover, or by hand)
            assertThat(db.update("UPDATE distlock_lock SET owner = 'thief:1', instance = NULL, expires_at = expires_at "
                    + "+ 60000000 WHERE lock_key = ?", prefix + "b")).isEqualTo(1);
            try {
                // renewals every 200 ms: the next one must find b's row gone
                boolean reported = lost.await(2, TimeUnit.SECONDS);
                System.out.println("loss of b reported within 2 s while a's release waited: " + reported
                        + " (a's release done: " + releaseOfA.isDone() + ")");
                assertThat(reported).as("loss of the lock taken behind its back reported").isTrue();
            }
            finally {
                blocker.rollback();
                blocker.setAutoCommit(true);
                try {
                    LockHandle late = stuck.join();
                    if (late != null) {
                        late.release();
                    }
                }
                catch (CompletionException ignored) {
                    // only the release of the worker matters here
                }
                releaseOfA.join();
            }
        }
    }
}

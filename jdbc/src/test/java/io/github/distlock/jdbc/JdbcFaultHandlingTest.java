package io.github.distlock.jdbc;

import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * What the provider does when a statement fails (by the kind of failure), with keys no database can store, and when it
 * is closed under its holders: on H2, with failures injected into the statements' connections.
 */
class JdbcFaultHandlingTest {

    @RegisterExtension
    static final Database db = Database.h2();

    private static final Duration WATCHDOG = Duration.ofMillis(600);

    private static final String RELEASE = "UPDATE distlock_lock SET owner = NULL";

    private static final String OWNERS_CHECK = "SELECT lock_key, owner FROM distlock_lock";

    private static JdbcLockOptions options() {
        return JdbcLockOptions.defaults().withWatchdogTimeout(WATCHDOG);
    }

    private static LockHandle acquire(JdbcLockProvider provider, String key, long leaseNanos) {
        return provider.acquire(new LockRequest(key, 0, leaseNanos, false, LockOwner.next())).join();
    }

    private static String key(String name) {
        return "faults:" + name + ":" + System.nanoTime();
    }

    /**
     * A release the database refuses (its definite answer: the same every time) is not retried, and the row, which
     * stays held, is no longer renewed with the instance's other watchdog locks: it expires by itself within the
     * watchdog timeout, while the instance's other lock stays held.
     */
    @Test
    void aReleaseTheDatabaseRefusesIsNotRetriedAndItsRowExpiresWhileTheOthersAreRenewed() {
        FaultyDataSource faulty = new FaultyDataSource(db.dataSource());
        String refused = key("refused");
        String kept = key("kept");
        try (JdbcLockProvider provider = new JdbcLockProvider(faulty.dataSource(), options());
                JdbcLockProvider other = new JdbcLockProvider(db.dataSource(), options())) {
            LockHandle held = acquire(provider, refused, 0);
            LockHandle keeper = acquire(provider, kept, 0);
            faulty.fail(RELEASE, new SQLException("refused by the test", "22000"), Integer.MAX_VALUE);
            CompletableFuture<Boolean> release = held.releaseAsync();
            assertThatThrownBy(release::join).hasCauseInstanceOf(JdbcLockException.class)
                    .hasMessageContaining("Releasing lock '" + refused + "' in table distlock_lock failed")
                    .hasMessageContaining("refused by the test");
            // not renewed any more: free for another instance within the watchdog timeout (and some polls)
            await().atMost(Duration.ofSeconds(3)).until(() -> tryOnce(other, refused) != null);
            assertThat(faulty.count(RELEASE)).as("release statements sent for a release the database refuses").isOne();
            assertThat(db.heldInDatabase(kept, provider.dialect())).as("the instance's other lock, renewed").isTrue();
            assertThat(keeper.stillHeld()).isTrue();
            faulty.fail(RELEASE, new SQLException("none"), 0);
            assertThat(keeper.release()).isTrue();
        }
    }

    /**
     * A release whose outcome is unknown (the connection broke: SQLState class 08) is given back in the background
     * until it gets through.
     */
    @Test
    void aReleaseWhoseOutcomeIsUnknownIsTriedAgainUntilItGetsThrough() {
        FaultyDataSource faulty = new FaultyDataSource(db.dataSource());
        String key = key("unknown");
        try (JdbcLockProvider provider = new JdbcLockProvider(faulty.dataSource(), options())) {
            LockHandle held = acquire(provider, key, 0);
            faulty.fail(RELEASE, new SQLException("connection reset by the test", "08006"), 2);
            assertThatThrownBy(held::release).isInstanceOf(JdbcLockException.class)
                    .hasMessageContaining("connection reset by the test");
            await().atMost(Duration.ofSeconds(3)).until(() -> db.lockRow(key).get("owner") == null);
            assertThat(faulty.count(RELEASE)).as("release, then two give-backs (the first failing)").isEqualTo(3);
        }
    }

    /**
     * A release that lost a race for its row (MariaDB's "Deadlock found": SQLState 40001, error 1213), which changed
     * nothing, is sent again at once: the caller is told the lock is released, not that the release failed.
     */
    @Test
    void aReleaseThatLostARaceForItsRowIsSentAgainAndSucceeds() {
        FaultyDataSource faulty = new FaultyDataSource(db.dataSource());
        String key = key("deadlock");
        try (JdbcLockProvider provider = new JdbcLockProvider(faulty.dataSource(), options())) {
            LockHandle held = acquire(provider, key, 0);
            faulty.fail(RELEASE, new SQLException("Deadlock found when trying to get lock", "40001", 1213), 2);
            assertThat(held.release()).isTrue();
            assertThat(db.lockRow(key).get("owner")).isNull();
            assertThat(faulty.count(RELEASE)).as("two deadlocked releases, then the one that got through").isEqualTo(3);
        }
    }

    /**
     * A watchdog row whose give-back never gets through (the connection breaks every time) is tried for the watchdog
     * timeout, not for as long as the provider lives, and expires by itself meanwhile, since it is no longer renewed.
     */
    @Test
    void aGiveBackThatNeverGetsThroughEndsAfterTheWatchdogTimeoutAndItsRowExpires() {
        FaultyDataSource faulty = new FaultyDataSource(db.dataSource());
        String key = key("never");
        String kept = key("kept");
        try (JdbcLockProvider provider = new JdbcLockProvider(faulty.dataSource(), options());
                JdbcLockProvider other = new JdbcLockProvider(db.dataSource(), options())) {
            LockHandle held = acquire(provider, key, 0);
            LockHandle keeper = acquire(provider, kept, 0);
            faulty.fail(RELEASE, new SQLException("connection reset by the test", "08006"), Integer.MAX_VALUE);
            assertThatThrownBy(held::release).isInstanceOf(JdbcLockException.class);
            await().atMost(Duration.ofSeconds(3)).until(() -> tryOnce(other, key) != null);
            // the retries end at the watchdog timeout: the count stops growing
            int[] last = {-1};
            await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(300)).until(() -> {
                int now = faulty.count(RELEASE);
                boolean settled = now == last[0];
                last[0] = now;
                return settled;
            });
            System.out.println("MEASURED give-back statements for a watchdog row over a " + WATCHDOG
                    + " watchdog timeout, each failing: " + last[0]);
            assertThat(last[0]).as("give-backs tried (about one every 60 ms for 600 ms)").isBetween(3, 20);
            assertThat(db.heldInDatabase(kept, provider.dialect())).as("the instance's other lock, renewed").isTrue();
            faulty.fail(RELEASE, new SQLException("none"), 0);
            assertThat(keeper.release()).isTrue();
        }
    }

    /** Keys no database of the backend can store faithfully fail at once, as the caller's mistake, naming the key. */
    @Test
    void keysTheDatabasesCannotStoreAreRefusedNamingTheKey() {
        FaultyDataSource counting = new FaultyDataSource(db.dataSource());
        try (JdbcLockProvider provider = new JdbcLockProvider(counting.dataSource(), options())) {
            int before = counting.count("");
            assertThatThrownBy(() -> acquire(provider, "order\u0000:1", 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("Lock key 'order\\u0000:1' contains a NUL character (at 5), which the jdbc backend's "
                            + "databases cannot store (PostgreSQL refuses it in text)");
            assertThatThrownBy(() -> acquire(provider, "order:\uD800", 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("Lock key 'order:\\uD800' contains half a surrogate pair (at 6)");
            assertThatThrownBy(() -> acquire(provider, "order:\uDC00x", 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("Lock key 'order:\\uDC00x' contains half a surrogate pair (at 6)");
            assertThat(counting.count("")).as("statements sent for refused keys").isEqualTo(before);
            // a whole pair is a character like any other
            LockHandle emoji = acquire(provider, "order:\uD83D\uDE00", 0);
            assertThat(emoji).isNotNull();
            assertThat(db.lockRow("order:\uD83D\uDE00").get("owner")).isNotNull();
            assertThat(emoji.release()).isTrue();
        }
    }

    /**
     * Closing the provider stops the renewals: the holders of watchdog locks are told at once, each exactly once, while
     * fixed leases (which need no renewal) and released locks are not.
     */
    @Test
    void closingTellsEachHolderOfAWatchdogLockOnce() {
        String watchdog = key("close-watchdog");
        String fixed = key("close-fixed");
        String released = key("close-released");
        JdbcLockProvider provider = new JdbcLockProvider(db.dataSource(), options());
        List<String> watchdogReports = new CopyOnWriteArrayList<>();
        List<String> otherReports = new CopyOnWriteArrayList<>();
        LockHandle watchdogHandle;
        try {
            watchdogHandle = acquire(provider, watchdog, 0);
            LockHandle fixedHandle = acquire(provider, fixed, TimeUnit.SECONDS.toNanos(10));
            LockHandle releasedHandle = acquire(provider, released, 0);
            watchdogHandle.whenLost(watchdogReports::add);
            fixedHandle.whenLost(otherReports::add);
            releasedHandle.whenLost(otherReports::add);
            assertThat(releasedHandle.release()).isTrue();
        }
        finally {
            provider.close();
        }
        await().atMost(Duration.ofSeconds(2)).until(() -> !watchdogReports.isEmpty());
        provider.close();
        await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2))
                .until(() -> watchdogReports.size() == 1 && otherReports.isEmpty());
        assertThat(watchdogReports).containsExactly("Lock '" + watchdog + "' lost: lock provider closed: renewal stopped");
        assertThat(watchdogHandle.lostWhileHeld()).isTrue();
        assertThat(watchdogHandle.stillHeld()).isFalse();
        // not released by the close: the row expires by the database's clock, as a dead process's would
        assertThat(db.lockRow(watchdog).get("owner").toString()).startsWith(provider.instanceId() + ":");
    }

    /**
     * A fixed lease that runs out while the check for locks taken away is under way (after it counted the lease as
     * lasting, before its read reached the database) is not reported as taken away: its row is still its own, only its
     * lease ended.
     */
    @Test
    void aFixedLeaseEndingDuringTheCheckForLocksTakenAwayIsNotReportedTakenAway() throws SQLException {
        FaultyDataSource faulty = new FaultyDataSource(db.dataSource());
        String key = key("lease-ends-during-check");
        // the default watchdog timeout: its periodic check comes after the test, which runs the check itself
        try (JdbcLockProvider provider = new JdbcLockProvider(faulty.dataSource(), JdbcLockOptions.defaults())) {
            LockHandle held = acquire(provider, key, Duration.ofMillis(300).toNanos());
            String expired = "SELECT 1 FROM distlock_lock WHERE lock_key = ? AND expires_at <= "
                    + provider.dialect().now();
            faulty.delay(OWNERS_CHECK, () -> await().atMost(Duration.ofSeconds(5))
                    .until(() -> !db.query(expired, key).isEmpty()));
            provider.watchdog().checkFixed();
            assertThat(faulty.count(OWNERS_CHECK)).as("reads of the fixed leases' owners").isEqualTo(1);
            assertThat(held.lostWhileHeld()).as("reported lost (taken away) after the check").isFalse();
            assertThat(db.lockRow(key).get("owner").toString()).startsWith(provider.instanceId() + ":");
            assertThat(held.release()).as("the release once the lease ran out").isFalse();
        }
    }

    private static LockHandle tryOnce(JdbcLockProvider provider, String key) {
        LockHandle handle = acquire(provider, key, 0);
        if (handle != null) {
            handle.release();
        }
        return handle;
    }
}

package io.github.distlock.jdbc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LockOptions;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockInstance;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.test.LockProviderContractTest;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The provider contract on one database, and what the table itself must show (rows, the database's clock, concurrent
 * inserts, batched renewal); a subclass per database registers it ({@link #database()}).
 */
abstract class JdbcLockProviderContract extends LockProviderContractTest {

    /** Short, so that the renewal and dead-holder tests take seconds: the suite waits for it. */
    static final Duration WATCHDOG = Duration.ofSeconds(1);

    abstract Database database();

    static JdbcLockOptions options() {
        return JdbcLockOptions.defaults().withWatchdogTimeout(WATCHDOG);
    }

    @Override
    protected LockProvider createProvider() {
        return new JdbcLockProvider(database().dataSource(), options());
    }

    @Override
    protected Duration watchdogTimeout() {
        return WATCHDOG;
    }

    /** Another application instance: a provider of its own on the same database, with its own instance id. */
    @Override
    protected LockProvider createOtherInstance() {
        JdbcLockProvider other = new JdbcLockProvider(database().dataSource(), options());
        other.announce(new LockInstance("other-instance", "host-of-the-other", 4343));
        return other;
    }

    /** Keys are closed in their row, for the one type this backend takes. */
    @Override
    protected boolean closesKeys(LockType type) {
        return type == LockType.REENTRANT;
    }

    /**
     * At once on the instance that force-released; on another instance at its next renewal period (a third of the
     * watchdog timeout, for watchdog locks and fixed leases alike), with a second of room for a loaded machine.
     */
    @Override
    protected Duration evictionNotice() {
        return WATCHDOG.dividedBy(3).plusSeconds(1);
    }

    /** Another process: a provider of its own (own instance id, own renewal), closed without a release. */
    @Override
    protected void acquireAndAbandon(LockRequest request) {
        try (JdbcLockProvider other = new JdbcLockProvider(database().dataSource(), options())) {
            LockHandle handle = other.acquire(request).join();
            assertThat(handle).as("the lock to abandon").isNotNull();
        }
    }

    /** An operator deleting the row: the holder's next renewal finds it gone. */
    @Override
    protected void expireBehindItsBack(String key) {
        assertThat(database().update("DELETE FROM distlock_lock WHERE lock_key = ?", key)).as("rows deleted").isEqualTo(1);
    }

    private JdbcLockProvider jdbc() {
        return (JdbcLockProvider) provider();
    }

    private static LockRequest watchdogRequest(String key, boolean fenced) {
        return new LockRequest(key, 0, 0, fenced, LockOwner.next());
    }

    // ---------------------------------------------------------------- the table

    /**
     * Instances racing for a key nobody has locked yet (no row: every one of them inserts) see exactly one winner and
     * "held" for the others, never a duplicate-key error, in the database's default isolation level.
     */
    @Test
    void concurrentFirstAcquisitionsOfANewKeyReadAsHeldNeverAsAnError() throws Exception {
        List<JdbcLockProvider> instances = new ArrayList<>();
        try {
            for (int i = 0; i < 8; i++) {
                instances.add(new JdbcLockProvider(database().dataSource(), options()));
            }
            for (int round = 0; round < 30; round++) {
                String key = key("new-" + round);
                assertThat(database().lockRow(key)).as("row of a key never locked").isNull();
                List<CompletableFuture<LockHandle>> tries = new ArrayList<>();
                for (JdbcLockProvider instance : instances) {
                    tries.add(instance.acquire(watchdogRequest(key, round % 2 == 0)));
                }
                List<LockHandle> winners = new ArrayList<>();
                for (CompletableFuture<LockHandle> attempt : tries) {
                    // a duplicate-key error would fail the future, and get() would throw here
                    LockHandle handle = attempt.get(slack().toMillis(), TimeUnit.MILLISECONDS);
                    if (handle != null) {
                        winners.add(handle);
                    }
                }
                assertThat(winners).as("round %d: instances that got the new key", round).hasSize(1);
                assertThat(database().lockRow(key).get("owner")).isNotNull();
                assertThat(winners.get(0).release()).isTrue();
            }
        }
        finally {
            instances.forEach(JdbcLockProvider::close);
        }
    }

    /** A released lock keeps its row, marked free, with its token: the next token is higher. */
    @Test
    void aReleasedLockKeepsItsRowMarkedFreeWithItsToken() {
        String key = key("k");
        LockHandle first = acquire(watchdogRequest(key, true));
        Map<String, Object> held = database().lockRow(key);
        assertThat(held.get("owner")).isEqualTo(jdbc().instanceId() + ":" + ownerOf(first));
        assertThat(held.get("instance")).as("a watchdog lock names the instance that renews it").isEqualTo(jdbc().instanceId());
        assertThat(((Number) held.get("token")).longValue()).isEqualTo(first.fencingToken());
        assertThat(first.release()).isTrue();
        Map<String, Object> free = database().lockRow(key);
        assertThat(free).as("the row after the release").isNotNull();
        assertThat(free.get("owner")).isNull();
        assertThat(free.get("instance")).isNull();
        assertThat(((Number) free.get("token")).longValue()).isEqualTo(first.fencingToken());
        LockHandle fixed = acquire(new LockRequest(key, 0, Duration.ofSeconds(5).toNanos(), true, LockOwner.next()));
        assertThat(database().lockRow(key).get("instance")).as("a fixed lease is renewed by nobody").isNull();
        assertThat(fixed.fencingToken()).isGreaterThan(first.fencingToken());
        assertThat(fixed.release()).isTrue();
    }

    private static long ownerOf(LockHandle handle) {
        String text = handle.toString();
        String owner = text.substring(text.indexOf("owner ") + 6);
        return Long.parseLong(owner.substring(owner.indexOf(':') + 1, owner.indexOf(owner.contains(",") ? ',' : ']')));
    }

    /** The expiry is the database's now plus the lease, not the application's clock. */
    @Test
    void theExpiryIsTheDatabasesNowPlusTheLease() {
        String key = key("k");
        Duration lease = Duration.ofSeconds(30);
        LockHandle handle = acquire(new LockRequest(key, 0, lease.toNanos(), false, LockOwner.next()));
        long remaining = ((Number) database().query("SELECT expires_at - " + jdbc().dialect().now() + " AS remaining "
                + "FROM distlock_lock WHERE lock_key = ?", key).get(0).get("remaining")).longValue();
        assertThat(remaining).as("µs left of a %s lease, by the database's clock", lease)
                .isBetween(lease.minus(slack()).toNanos() / 1000, lease.toNanos() / 1000);
        assertThat(handle.release()).isTrue();
    }

    /** Keys longer than the column are refused with a clear error, before any statement. */
    @Test
    void aKeyLongerThanTheColumnIsRefused() {
        String key = "k".repeat(JdbcLockProvider.MAX_KEY_LENGTH + 1);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> provider().acquire(watchdogRequest(key, false)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("256 characters")
                .hasMessageContaining("at most 255");
        // the longest allowed key, in characters of 3 UTF-8 bytes (MySQL's column counts bytes), pairs of 4 at the end
        String longest = "\u20AC".repeat(JdbcLockProvider.MAX_KEY_LENGTH - 4) + "\uD83D\uDD12\uD83D\uDD12";
        LockHandle handle = acquire(watchdogRequest(longest, false));
        assertThat(handle).isNotNull();
        assertThat(tryOnce(longest, LockType.REENTRANT)).isNull();
        assertThat(handle.release()).isTrue();
    }

    /** Keys that differ only in case or trailing spaces are different locks (MySQL's default collations would merge them). */
    @Test
    void keysDifferingInCaseOrTrailingSpacesAreDifferentLocks() {
        LockHandle lower = hold(key("order"), LockType.REENTRANT);
        LockHandle upper = hold(key("ORDER"), LockType.REENTRANT);
        LockHandle spaced = hold(key("order "), LockType.REENTRANT);
        assertThat(lower.release()).isTrue();
        assertThat(upper.release()).isTrue();
        assertThat(spaced.release()).isTrue();
    }

    /**
     * A caller interrupted while waiting (through the template, as an application sees it) gets an exception, never the
     * lock, and once the holder releases, no row stays held for it.
     */
    @Test
    void anInterruptedWaiterLeavesNoRowHeld() throws Exception {
        String key = key("k");
        LockHandle holder = hold(key, LockType.REENTRANT);
        DefaultLockTemplate template = new DefaultLockTemplate(provider(), "", Duration.ZERO, null, List.of());
        AtomicBoolean ran = new AtomicBoolean();
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            try {
                template.run(key, LockOptions.waitFor(Duration.ofSeconds(30)), () -> ran.set(true));
                outcome.complete(null);
            }
            catch (Throwable failure) {
                outcome.complete(failure);
            }
        }, "interrupted-waiter");
        waiter.start();
        await().atMost(slack()).until(() -> waiter.getState() == Thread.State.WAITING
                || waiter.getState() == Thread.State.TIMED_WAITING);
        waiter.interrupt();
        assertThat(outcome.get(slack().toMillis(), TimeUnit.MILLISECONDS)).as("what the interrupted caller got")
                .isNotNull();
        assertThat(ran).as("the guarded code of the interrupted caller").isFalse();
        assertThat(holder.release()).isTrue();
        JdbcDialect dialect = jdbc().dialect();
        // The template does not cancel the provider's acquisition (its chain gives back what that still takes: a
        // grant and a give-back within a poll interval of the release); what must hold is that no row stays held
        await().during(Duration.ofMillis(500)).atMost(slack()).until(() -> !database().heldInDatabase(key, dialect));
        template.shutdown();
    }

    /** A cancelled acquisition stops trying: after the holder's release nobody is granted the row, not even briefly. */
    @Test
    void aCancelledAcquisitionStopsTrying() {
        String key = key("k");
        LockHandle holder = hold(key, LockType.REENTRANT);
        CompletableFuture<LockHandle> waiter = acquireAsync(new LockRequest(key, Duration.ofSeconds(30).toNanos(), 0,
                false, LockOwner.next()));
        await().during(Duration.ofMillis(200)).atMost(slack()).until(() -> !waiter.isDone());
        assertThat(waiter.cancel(true)).isTrue();
        assertThat(holder.release()).isTrue();
        long token = ((Number) database().lockRow(key).get("token")).longValue();
        JdbcDialect dialect = jdbc().dialect();
        // every grant raises the row's token: a try that went on would show, even if it gave the lock straight back
        await().during(Duration.ofMillis(500)).atMost(slack()).until(() -> !database().heldInDatabase(key, dialect)
                && ((Number) database().lockRow(key).get("token")).longValue() == token);
    }

    /** Releases asked for just before the provider is closed still run: their callers are not left waiting. */
    @Test
    void releasesAskedForBeforeCloseStillRun() throws Exception {
        JdbcLockProvider closing = new JdbcLockProvider(database().dataSource(), options());
        List<CompletableFuture<Boolean>> releases = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            LockHandle handle = closing.acquire(watchdogRequest(key("k" + i), false)).join();
            assertThat(handle).isNotNull();
            releases.add(handle.releaseAsync());
        }
        closing.close();
        for (CompletableFuture<Boolean> release : releases) {
            assertThat(release.get(slack().toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        }
        for (int i = 0; i < 8; i++) {
            assertThat(database().heldInDatabase(key("k" + i), closing.dialect())).isFalse();
        }
    }

    // ---------------------------------------------------------------- operations, in the table

    /**
     * A force release frees the row and keeps its token, so the next holder's token is higher; a key never locked is
     * closed by a row of its own, free, with the reason, and reopening clears it; a reason longer than its column is
     * refused naming the method.
     */
    @Test
    void aForceReleaseKeepsTheTokenAndAClosedKeyIsARowWithItsReason() {
        String key = key("k");
        LockHandle first = acquire(watchdogRequest(key, true));
        assertThat(jdbc().forceRelease(key)).hasSize(1);
        Map<String, Object> freed = database().lockRow(key);
        assertThat(freed.get("owner")).as("owner after the force release").isNull();
        assertThat(freed.get("instance")).isNull();
        assertThat(((Number) freed.get("token")).longValue()).isEqualTo(first.fencingToken());
        LockHandle next = acquire(watchdogRequest(key, true));
        assertThat(next.fencingToken()).isGreaterThan(first.fencingToken());
        assertThat(next.release()).isTrue();

        String never = key("never-locked");
        assertThat(jdbc().closeKey(never, "sold out")).as("waiters told").isZero();
        assertThat(database().query("SELECT owner, closed FROM distlock_lock WHERE lock_key = ?", never))
                .singleElement().satisfies(row -> {
                    assertThat(row.get("owner")).isNull();
                    assertThat(row.get("closed")).isEqualTo("sold out");
                });
        jdbc().reopenKey(never);
        assertThat(database().query("SELECT closed FROM distlock_lock WHERE lock_key = ?", never).get(0).get("closed"))
                .as("after reopening").isNull();
        assertThatThrownBy(() -> jdbc().closeKey(never, "x".repeat(256)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("closeKey(key, reason)")
                .hasMessageContaining("256 characters");
    }

    /** An announced instance is a row of the table of instances, renewed with the locks, and gone once closed. */
    @Test
    void anAnnouncedInstanceIsARowRenewedWithTheLocksAndDeletedOnClose() {
        JdbcLockProvider other = new JdbcLockProvider(database().dataSource(), options());
        String sql = "SELECT application, host, pid, expires_at FROM distlock_lock_peers WHERE instance = ?";
        try {
            other.announce(new LockInstance("announced", "host-a", 77));
            await().atMost(slack()).until(() -> !database().query(sql, other.instanceId()).isEmpty());
            Map<String, Object> row = database().query(sql, other.instanceId()).get(0);
            assertThat(row).containsEntry("application", "announced").containsEntry("host", "host-a");
            assertThat(((Number) row.get("pid")).longValue()).isEqualTo(77);
            long expiresAt = ((Number) row.get("expires_at")).longValue();
            await().atMost(slack()).until(() -> ((Number) database().query(sql, other.instanceId()).get(0)
                    .get("expires_at")).longValue() > expiresAt);
        }
        finally {
            other.close();
        }
        assertThat(database().query(sql, other.instanceId())).as("after close").isEmpty();
    }

    // ---------------------------------------------------------------- watchdog

    /**
     * One statement per period renews every watchdog lock of an instance (not one per lock); a lock taken away behind
     * its holder's back is reported lost once, and only that one.
     */
    @Test
    void oneStatementPerPeriodRenewsEveryLockAndALossIsReportedOnce() {
        CountingDataSource counting = new CountingDataSource(database().dataSource());
        try (JdbcLockProvider instance = new JdbcLockProvider(counting.dataSource(), options())) {
            List<LockHandle> handles = new ArrayList<>();
            Map<String, Long> firstExpiry = new HashMap<>();
            AtomicInteger[] losses = new AtomicInteger[10];
            for (int i = 0; i < 10; i++) {
                String key = key("k" + i);
                LockHandle handle = instance.acquire(watchdogRequest(key, false)).join();
                assertThat(handle).isNotNull();
                handles.add(handle);
                firstExpiry.put(key, ((Number) database().lockRow(key).get("expires_at")).longValue());
                AtomicInteger lost = new AtomicInteger();
                losses[i] = lost;
                handle.whenLost(reason -> lost.incrementAndGet());
            }
            String renewal = "UPDATE distlock_lock SET expires_at";
            int before = counting.count(renewal);
            long start = System.nanoTime();
            Duration held = WATCHDOG.multipliedBy(5).dividedBy(2);
            await().during(held).atMost(held.plus(slack())).pollInterval(WATCHDOG.dividedBy(4))
                    .until(() -> firstExpiry.keySet().stream().allMatch(key -> database().heldInDatabase(key,
                            instance.dialect())));
            long periods = (System.nanoTime() - start) / WATCHDOG.dividedBy(3).toNanos();
            int renewals = counting.count(renewal) - before;
            System.out.printf("MEASURED jdbc/%s renewal: %d statements renewed 10 watchdog locks over %d periods%n",
                    database(), renewals, periods);
            assertThat(renewals).as("renewal statements for 10 locks in %d periods", periods)
                    .isBetween(2, (int) periods + 1);
            for (String key : firstExpiry.keySet()) {
                long expiry = ((Number) database().lockRow(key).get("expires_at")).longValue();
                assertThat(expiry - firstExpiry.get(key)).as("µs the expiry of %s moved on", key)
                        .isGreaterThan(WATCHDOG.toNanos() / 1000);
            }

            assertThat(database().update("DELETE FROM distlock_lock WHERE lock_key = ?", key("k0"))).isEqualTo(1);
            await().atMost(WATCHDOG.multipliedBy(2).plus(slack())).until(() -> losses[0].get() == 1);
            // further periods neither report it again nor report the others
            await().during(WATCHDOG).atMost(WATCHDOG.plus(slack())).until(() -> losses[0].get() == 1
                    && java.util.Arrays.stream(losses).skip(1).allMatch(lost -> lost.get() == 0));
            assertThat(handles.get(0).lostWhileHeld()).isTrue();
            assertThat(handles.get(0).release()).as("release of the lost lock").isFalse();
            assertThat(losses[0].get()).isEqualTo(1);
            for (LockHandle handle : handles.subList(1, handles.size())) {
                assertThat(handle.release()).isTrue();
            }
            assertThat(instance.watchedLocks()).isZero();
        }
    }
}

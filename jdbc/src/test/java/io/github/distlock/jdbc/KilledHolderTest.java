package io.github.distlock.jdbc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A holder JVM killed with SIGKILL (no release, no more renewals) on PostgreSQL: its lock stays taken while it lives,
 * and comes free by the database's clock within the watchdog timeout (or at the end of its fixed lease) after its
 * death, and not before. "When" is read from the database: the dead holder's expiry in its row at the kill, and the
 * moment the next holder was granted the lock (its fixed lease's expiry minus the lease).
 */
class KilledHolderTest {

    private static final Duration WATCHDOG = Duration.ofSeconds(2);
    private static final Duration CONTENDER_LEASE = Duration.ofSeconds(60);
    private static final Duration HOLDER_START = Duration.ofSeconds(60);

    @RegisterExtension
    static final Database db = Database.postgres();

    @Test
    void aKilledHoldersWatchdogLockIsFreedWithinTheWatchdogTimeoutAndNotBefore() throws Exception {
        String key = "killed:watchdog:" + System.nanoTime();
        try (JdbcLockProvider contender = new JdbcLockProvider(db.dataSource(),
                JdbcLockOptions.defaults().withWatchdogTimeout(WATCHDOG));
                HolderJvm holder = startHolder(key, Duration.ZERO)) {
            holder.await("HOLDING", HOLDER_START);
            // while the holder lives, its renewals keep the lock over several watchdog timeouts
            AtomicInteger refused = new AtomicInteger();
            Duration alive = WATCHDOG.multipliedBy(5).dividedBy(2);
            await().during(alive).atMost(alive.plusSeconds(5)).pollInterval(Duration.ofMillis(100)).until(() -> {
                boolean free = tryOnce(contender, key);
                if (!free) {
                    refused.incrementAndGet();
                }
                return !free && holder.isAlive();
            });

            holder.kill();
            long killedAt = dbNowMicros();
            long deadExpiry = ((Number) db.lockRow(key).get("expires_at")).longValue();
            assertThat(deadExpiry - killedAt).as("µs left of the dead holder's lease at the kill").isPositive()
                    .isLessThanOrEqualTo(WATCHDOG.toNanos() / 1000);
            long grantedAt = nextGrant(contender, key, WATCHDOG.plusSeconds(10));

            System.out.printf("MEASURED jdbc/postgresql killed watchdog holder: %d tries refused over %d ms while it "
                    + "lived; lease left at the kill %d ms; free %d ms after the kill (watchdog timeout %d ms)%n",
                    refused.get(), alive.toMillis(), (deadExpiry - killedAt) / 1000, (grantedAt - killedAt) / 1000,
                    WATCHDOG.toMillis());
            assertThat(refused.get()).isGreaterThan(10);
            assertThat(grantedAt).as("granted (db µs) not before the dead holder's expiry").isGreaterThanOrEqualTo(deadExpiry);
            assertThat(grantedAt - killedAt).as("µs from the kill to the next grant")
                    .isLessThanOrEqualTo(WATCHDOG.plusSeconds(1).toNanos() / 1000);
        }
    }

    @Test
    void aKilledHoldersFixedLeaseIsFreedAtItsEndAndNotBefore() throws Exception {
        Duration lease = Duration.ofSeconds(3);
        String key = "killed:lease:" + System.nanoTime();
        try (JdbcLockProvider contender = new JdbcLockProvider(db.dataSource(),
                JdbcLockOptions.defaults().withWatchdogTimeout(WATCHDOG));
                HolderJvm holder = startHolder(key, lease)) {
            holder.await("HOLDING", HOLDER_START);
            holder.kill();
            long killedAt = dbNowMicros();
            long deadExpiry = ((Number) db.lockRow(key).get("expires_at")).longValue();
            assertThat(tryOnce(contender, key)).as("free right after the kill").isFalse();
            long grantedAt = nextGrant(contender, key, lease.plusSeconds(10));
            System.out.printf("MEASURED jdbc/postgresql killed fixed-lease holder: lease %d ms, left at the kill %d ms, "
                    + "free %d ms after the kill%n", lease.toMillis(), (deadExpiry - killedAt) / 1000,
                    (grantedAt - killedAt) / 1000);
            assertThat(grantedAt).as("granted (db µs) not before the end of the dead holder's lease")
                    .isGreaterThanOrEqualTo(deadExpiry);
            assertThat(grantedAt - deadExpiry).as("µs from the end of the lease to the next grant")
                    .isLessThanOrEqualTo(Duration.ofSeconds(1).toNanos() / 1000);
        }
    }

    private static HolderJvm startHolder(String key, Duration lease) {
        List<String> arguments = new ArrayList<>(db.connectionArguments());
        arguments.addAll(List.of(key, Long.toString(lease.toMillis()), Long.toString(WATCHDOG.toMillis())));
        return HolderJvm.start(JdbcHolderMain.class, arguments);
    }

    /** Whether one try got the lock; it is given back at once. */
    private static boolean tryOnce(JdbcLockProvider provider, String key) throws Exception {
        LockHandle handle = provider.acquire(new LockRequest(key, 0, 0, false, LockOwner.next())).get(10, TimeUnit.SECONDS);
        if (handle == null) {
            return false;
        }
        assertThat(handle.release()).isTrue();
        return true;
    }

    /** Waits for the lock with a fixed lease; when (database µs) it was granted. */
    private static long nextGrant(JdbcLockProvider provider, String key, Duration wait) throws Exception {
        LockHandle next = provider.acquire(new LockRequest(key, wait.toNanos(), CONTENDER_LEASE.toNanos(), false,
                LockOwner.next())).get(wait.plusSeconds(5).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next).as("the next holder, within %s", wait).isNotNull();
        long grantedAt = ((Number) db.lockRow(key).get("expires_at")).longValue() - CONTENDER_LEASE.toNanos() / 1000;
        assertThat(next.release()).isTrue();
        return grantedAt;
    }

    private static long dbNowMicros() {
        return ((Number) db.query("SELECT " + JdbcDialect.POSTGRESQL.now() + " AS now").get(0).get("now")).longValue();
    }
}

package io.github.distlock.jdbc;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A holder that was not renewed for a whole watchdog timeout (its JVM paused, or its database unreachable) and releases
 * before the watchdog's overdue check comes round is told its lock was lost: the database had expired it, and another
 * caller may have held the key meanwhile (a holder paused past its lease that resumes while its database is cut off
 * and releases at once would otherwise never be told).
 */
class ALockReleasedAfterItsLeaseRanOutIsReportedLostTest {

    @RegisterExtension
    static final Database h2 = Database.h2();

    @Test
    void aWatchdogLockNotRenewedForAWholeTimeoutIsReportedLostAtItsRelease() throws Exception {
        // a long timeout: no renewal and no overdue check comes round during the test by itself
        Duration watchdog = Duration.ofSeconds(60);
        try (JdbcLockProvider provider = new JdbcLockProvider(h2.dataSource(),
                JdbcLockOptions.defaults().withWatchdogTimeout(watchdog))) {
            LockHandle handle = provider.acquire(new LockRequest("jdbc:overdue-at-release", 0, 0, false,
                    LockType.REENTRANT, LockOwner.next(), 1)).get(10, TimeUnit.SECONDS);
            CompletableFuture<String> lost = new CompletableFuture<>();
            handle.whenLost(lost::complete);
            // as if the holder's JVM had been paused for longer than the watchdog timeout since the last renewal
            ((JdbcLockHandle) handle).renewedAt -= watchdog.toNanos() + 1;

            handle.release();

            assertThat(lost.get(5, TimeUnit.SECONDS)).startsWith("Lock 'jdbc:overdue-at-release' lost: no renewal of it "
                    + "was seen for PT1M when its holder released it");
        }
    }

    @Test
    void aWatchdogLockRenewedInTimeIsNotReportedLostAtItsRelease() throws Exception {
        try (JdbcLockProvider provider = new JdbcLockProvider(h2.dataSource(),
                JdbcLockOptions.defaults().withWatchdogTimeout(Duration.ofSeconds(60)))) {
            LockHandle handle = provider.acquire(new LockRequest("jdbc:released-in-time", 0, 0, false,
                    LockType.REENTRANT, LockOwner.next(), 1)).get(10, TimeUnit.SECONDS);
            CompletableFuture<String> lost = new CompletableFuture<>();
            handle.whenLost(lost::complete);

            assertThat(handle.release()).isTrue();
            assertThat(lost).isNotDone();
        }
    }
}

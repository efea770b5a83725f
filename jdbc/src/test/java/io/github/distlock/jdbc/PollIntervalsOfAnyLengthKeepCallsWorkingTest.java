package io.github.distlock.jdbc;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A poll interval that the startup accepts keeps every later call working, however long it is: the largest
 * {@code Duration} as {@code distlock.jdbc.min-poll-interval} or {@code max-poll-interval} is taken as 100 years (a
 * pause never outlasts the wait), instead of an {@link ArithmeticException} from every acquisition or a waiter that
 * never hears back. What cannot work is refused at startup, naming the property.
 */
class PollIntervalsOfAnyLengthKeepCallsWorkingTest {

    private static final Duration LARGEST = Duration.ofSeconds(Long.MAX_VALUE, 999_999_999);

    @RegisterExtension
    static final Database db = Database.h2();

    private static JdbcLockOptions options(Duration min, Duration max) {
        return JdbcLockOptions.defaults().withWatchdogTimeout(Duration.ofSeconds(1)).withPollIntervals(min, max);
    }

    private static LockRequest request(String key, Duration wait) {
        return new LockRequest(key, wait.toNanos(), 0, false, LockOwner.next());
    }

    @Test
    void theLargestMaxPollIntervalStillEndsAWaitWhenItRunsOut() throws Exception {
        try (JdbcLockProvider provider = new JdbcLockProvider(db.dataSource(), options(Duration.ofMillis(5), LARGEST))) {
            LockHandle holder = provider.acquire(request("max-poll", Duration.ZERO)).get(5, TimeUnit.SECONDS);
            assertThat(holder).isNotNull();
            // doublings past the largest interval: the pause must stay within the 300 ms wait, not overflow
            CompletableFuture<LockHandle> waiter = provider.acquire(request("max-poll", Duration.ofMillis(300)));
            assertThat(waiter.get(10, TimeUnit.SECONDS)).as("a waiter whose wait ran out while the key was held").isNull();
            CompletableFuture<LockHandle> next = provider.acquire(request("max-poll", Duration.ofSeconds(30)));
            assertThat(holder.release()).isTrue();
            LockHandle got = next.get(10, TimeUnit.SECONDS);
            assertThat(got).as("a waiter after the release").isNotNull();
            assertThat(got.release()).isTrue();
        }
    }

    @Test
    void theLargestMinPollIntervalStillAnswersEveryCall() throws Exception {
        try (JdbcLockProvider provider = new JdbcLockProvider(db.dataSource(), options(LARGEST, LARGEST))) {
            LockHandle holder = provider.acquire(request("min-poll", Duration.ZERO)).get(5, TimeUnit.SECONDS);
            assertThat(holder).as("a try with the largest min-poll-interval").isNotNull();
            assertThat(provider.acquire(request("min-poll", Duration.ofMillis(200))).get(10, TimeUnit.SECONDS))
                    .as("a waiter whose wait ran out").isNull();
            assertThat(holder.release()).isTrue();
        }
    }

    @Test
    void intervalsAndTimeoutsThatCannotWorkAreRefusedNamingTheProperty() {
        assertThatThrownBy(() -> options(Duration.ZERO, Duration.ofMillis(100))).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("distlock.jdbc.min-poll-interval must be at least 1 ms, was PT0S");
        assertThatThrownBy(() -> JdbcLockOptions.defaults().withWatchdogTimeout(LARGEST))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("distlock.watchdog-timeout must be between PT0.1S and PT24H, was " + LARGEST);
        assertThatThrownBy(() -> JdbcLockOptions.defaults().withWatchdogTimeout(Duration.ofMillis(99)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("distlock.watchdog-timeout must be between PT0.1S and PT24H, was PT0.099S");
    }
}

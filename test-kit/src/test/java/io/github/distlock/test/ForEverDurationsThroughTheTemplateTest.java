package io.github.distlock.test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LockOptions;
import io.github.distlock.LockResult;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockDurations;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * "For ever" as users write it to the template — the largest {@code Duration} as wait, lease and minimum hold — is
 * {@link LockDurations#FOR_EVER}: the call runs under a lock no second caller gets, instead of failing with an
 * {@link ArithmeticException} from {@code Duration.toNanos()}. Below one millisecond is refused naming the option.
 */
class ForEverDurationsThroughTheTemplateTest {

    private static final Duration LARGEST = Duration.ofSeconds(Long.MAX_VALUE, 999_999_999);

    private final InMemoryLockProvider provider = new InMemoryLockProvider(Duration.ofSeconds(1));
    private final DefaultLockTemplate template = new DefaultLockTemplate(provider, "", Duration.ZERO, null, List.of());

    @AfterEach
    void close() {
        provider.close();
    }

    @Test
    void theLargestDurationAsWaitAndLeaseLocksUntilTheCallEndsForEveryExclusiveType() throws Exception {
        for (LockType type : List.of(LockType.REENTRANT, LockType.FAIR, LockType.WRITE)) {
            LockOptions forEver = new LockOptions(LARGEST, LARGEST, false, type, null);
            assertThat(forEver.waitTime()).isEqualTo(LockDurations.FOR_EVER);
            assertThat(forEver.leaseTime()).isEqualTo(LockDurations.FOR_EVER);
            LockResult<Boolean> outer = template.tryExecute("k-" + type, forEver, () -> {
                // another caller, on another thread: must be refused while this one holds
                return CompletableFuture.supplyAsync(() -> template.tryExecute("k-" + type,
                        LockOptions.waitFor(Duration.ZERO).withType(type), () -> true).acquired()).get(5, TimeUnit.SECONDS);
            });
            assertThat(outer.acquired()).as("%s with the largest wait and lease", type).isTrue();
            assertThat(outer.value()).as("a second %s caller got in beside a lease of the largest Duration", type)
                    .isFalse();
            assertThat(provider.lockedKeys()).as("released when the call ended").isEmpty();
        }
    }

    @Test
    void theLargestMinimumHoldIsAcceptedAndKeepsTheLock() {
        LockOptions options = new LockOptions(Duration.ZERO, LARGEST, false, LockType.REENTRANT, LARGEST);
        assertThat(options.holdAtLeast()).isEqualTo(LockDurations.FOR_EVER);
        assertThat(template.tryExecute("held", options, () -> true).acquired()).isTrue();
        assertThat(template.tryExecute("held", LockOptions.waitFor(Duration.ZERO), () -> true).acquired())
                .as("a second caller inside the minimum hold").isFalse();
    }

    @Test
    void belowOneMillisecondIsRefusedNamingTheOption() {
        assertThatThrownBy(() -> LockOptions.waitFor(Duration.ofNanos(999_999))).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("LockOptions.waitTime must be 0 or at least 1 ms, was PT0.000999999S");
        assertThatThrownBy(() -> LockOptions.DEFAULTS.withLeaseTime(Duration.ofNanos(1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("LockOptions.leaseTime must be 0 (LockOptions.WATCHDOG) or at least 1 ms, was PT0.000000001S");
        assertThatThrownBy(() -> LockOptions.DEFAULTS.withHoldAtLeast(Duration.ofSeconds(Long.MIN_VALUE)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("LockOptions.holdAtLeast must be 0 or at least 1 ms, was PT-");
    }
}

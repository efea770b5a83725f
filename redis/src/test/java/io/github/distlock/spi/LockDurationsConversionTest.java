package io.github.distlock.spi;

import java.math.BigInteger;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Every conversion of {@link LockDurations} against an independent model in {@link BigInteger} arithmetic (exact, so
 * it cannot overflow): the named extremes (0, 1 ns, 999,999 ns, 1 ms, 1 ms + 1 ns, {@code Long.MAX_VALUE} of every
 * {@link TimeUnit}, a {@code Duration} of {@code Long.MAX_VALUE} seconds) and generated values around every unit's
 * boundaries.
 *
 * <p>CI runs {@value #DEFAULT_TRIES} generated values from seed {@value #DEFAULT_SEED}. A long run with a random seed:
 * {@code ./mvnw -pl redis -am verify -Dtest=LockDurationsConversionTest -Ddistlock.durations.tries=5000000
 * -Ddistlock.durations.seed=random}; a failure names the seed and the value, to be kept below as a fixed example.
 */
class LockDurationsConversionTest {

    private static final long DEFAULT_SEED = 20_241_124L;
    private static final int DEFAULT_TRIES = 20_000;

    private static final BigInteger FOR_EVER = BigInteger.valueOf(36_500L).multiply(BigInteger.valueOf(86_400L))
            .multiply(BigInteger.valueOf(1_000_000_000L));
    private static final BigInteger LONG_MAX = BigInteger.valueOf(Long.MAX_VALUE);
    private static final BigInteger LONG_MIN = BigInteger.valueOf(Long.MIN_VALUE);
    private static final BigInteger TWO_TO_64 = BigInteger.ONE.shiftLeft(64);

    private static final long[] NAMED = {0, 1, 999_999, 1_000_000, 1_000_001, 999, 1_000, 1_001, 999_999_999,
            1_000_000_000, 1_000_000_001, Long.MAX_VALUE, Long.MAX_VALUE - 1, Long.MIN_VALUE, Long.MIN_VALUE + 1, -1,
            -999_999, -1_000_000, -1_000_001, LockDurations.FOR_EVER_NANOS, LockDurations.FOR_EVER_NANOS + 1,
            LockDurations.FOR_EVER_NANOS - 1, Long.MAX_VALUE / 2, Long.MAX_VALUE / 1_000, Long.MAX_VALUE / 1_000_000};

    // ---------------------------------------------------------------- the model

    private static BigInteger clampToForEver(BigInteger nanos) {
        return nanos.max(FOR_EVER.negate()).min(FOR_EVER);
    }

    private static BigInteger nanosOf(long amount, TimeUnit unit) {
        return BigInteger.valueOf(amount).multiply(BigInteger.valueOf(unit.toNanos(1)));
    }

    private static BigInteger nanosOf(Duration duration) {
        return BigInteger.valueOf(duration.getSeconds()).multiply(BigInteger.valueOf(1_000_000_000L))
                .add(BigInteger.valueOf(duration.getNano()));
    }

    /** The smallest whole number of {@code unit} ns not below {@code nanos}: a division that truncates, corrected. */
    private static BigInteger ceiling(BigInteger nanos, long unit) {
        BigInteger[] quotientAndRemainder = nanos.divideAndRemainder(BigInteger.valueOf(unit));
        BigInteger quotient = quotientAndRemainder[0];
        return (quotientAndRemainder[1].signum() > 0) ? quotient.add(BigInteger.ONE) : quotient;
    }

    private static long saturated(BigInteger value) {
        return value.max(LONG_MIN).min(LONG_MAX).longValueExact();
    }

    /** {@code value} as a Java long would wrap it: what nanoTime arithmetic does. */
    private static long wrapped(BigInteger value) {
        BigInteger low = value.mod(TWO_TO_64);
        return (low.compareTo(LONG_MAX) > 0) ? low.subtract(TWO_TO_64).longValueExact() : low.longValueExact();
    }

    // ---------------------------------------------------------------- the values

    private static long seed() {
        String seed = System.getProperty("distlock.durations.seed");
        if (seed == null) {
            return DEFAULT_SEED;
        }
        return "random".equals(seed) ? new SplittableRandom().nextLong() : Long.parseLong(seed);
    }

    private static int tries() {
        return Integer.getInteger("distlock.durations.tries", DEFAULT_TRIES);
    }

    /** Named extremes, then values around k units of every TimeUnit (k small, k huge) and of any size. */
    private static List<Long> values(long seed) {
        List<Long> values = new ArrayList<>();
        for (long named : NAMED) {
            values.add(named);
        }
        for (TimeUnit unit : TimeUnit.values()) {
            long one = unit.toNanos(1);
            for (long k : new long[] {1, 2, 1_000, Long.MAX_VALUE / one}) {
                for (long delta = -2; delta <= 2; delta++) {
                    values.add(LockDurations.saturatedAdd(LockDurations.saturatedMultiply(k, one), delta));
                }
            }
        }
        SplittableRandom random = new SplittableRandom(seed);
        long[] units = {1, 1_000, 1_000_000, 1_000_000_000, 60_000_000_000L, 3_600_000_000_000L, 86_400_000_000_000L};
        for (int i = 0; i < tries(); i++) {
            switch (random.nextInt(3)) {
                case 0 -> {
                    long unit = units[random.nextInt(units.length)];
                    long k = random.nextLong(0, Long.MAX_VALUE / unit);
                    values.add(k * unit + random.nextLong(-3, 4));
                }
                case 1 -> values.add(random.nextLong() >> random.nextInt(64));
                default -> values.add(LockDurations.FOR_EVER_NANOS + random.nextLong(-1_000_000_000L, 1_000_000_000L));
            }
        }
        return values;
    }

    // ---------------------------------------------------------------- the checks

    @Test
    void conversionsFromAmountsOfEveryUnitSaturateAtForEverAndNeverOverflow() {
        long seed = seed();
        for (long value : values(seed)) {
            for (TimeUnit unit : TimeUnit.values()) {
                long expected = clampToForEver(nanosOf(value, unit)).longValueExact();
                assertThat(LockDurations.toNanos(value, unit)).as("seed %d: toNanos(%d, %s)", seed, value, unit)
                        .isEqualTo(expected);
                if (value >= 0) {
                    assertThat(LockDurations.toDuration(value, unit)).as("seed %d: toDuration(%d, %s)", seed, value, unit)
                            .isEqualTo(Duration.ofNanos(expected));
                }
            }
        }
    }

    @Test
    void conversionsFromDurationsSaturateAtForEverInsteadOfThrowing() {
        long seed = seed();
        SplittableRandom random = new SplittableRandom(seed);
        List<Duration> durations = new ArrayList<>(List.of(Duration.ZERO, Duration.ofNanos(1), Duration.ofNanos(999_999),
                Duration.ofMillis(1), Duration.ofNanos(1_000_001), Duration.ofSeconds(Long.MAX_VALUE),
                Duration.ofSeconds(Long.MAX_VALUE, 999_999_999), Duration.ofSeconds(Long.MIN_VALUE), LockDurations.FOR_EVER,
                LockDurations.FOR_EVER.plusNanos(1), LockDurations.FOR_EVER.minusNanos(1), Duration.ofNanos(Long.MAX_VALUE),
                Duration.ofNanos(Long.MAX_VALUE).plusNanos(1)));
        for (long value : values(seed)) {
            durations.add(Duration.ofNanos(value));
            durations.add(Duration.ofSeconds(value, random.nextLong(1_000_000_000L)));
        }
        for (Duration duration : durations) {
            long expected = clampToForEver(nanosOf(duration)).longValueExact();
            assertThat(LockDurations.toNanos(duration)).as("seed %d: toNanos(%s)", seed, duration).isEqualTo(expected);
            Duration capped = LockDurations.capped(duration);
            assertThat(capped).as("seed %d: capped(%s)", seed, duration)
                    .isEqualTo((duration.compareTo(LockDurations.FOR_EVER) > 0) ? LockDurations.FOR_EVER : duration);
        }
    }

    @Test
    void roundingUpToMillisMicrosAndSecondsNeverShortensNorOverflows() {
        long seed = seed();
        for (long nanos : values(seed)) {
            BigInteger clamped = clampToForEver(BigInteger.valueOf(nanos));
            assertThat(LockDurations.ceilMillis(nanos)).as("seed %d: ceilMillis(%d)", seed, nanos)
                    .isEqualTo(ceiling(clamped, 1_000_000).longValueExact());
            assertThat(LockDurations.ceilMicros(nanos)).as("seed %d: ceilMicros(%d)", seed, nanos)
                    .isEqualTo(ceiling(clamped, 1_000).longValueExact());
            assertThat(LockDurations.ceilSeconds(nanos)).as("seed %d: ceilSeconds(%d)", seed, nanos)
                    .isEqualTo(ceiling(clamped, 1_000_000_000).longValueExact());
            if (nanos > 0) {
                // the promise the backends rely on: a positive lease stays positive, never "expire now"
                assertThat(LockDurations.ceilMillis(nanos)).as("seed %d: ceilMillis(%d) > 0", seed, nanos).isPositive();
            }
        }
    }

    @Test
    void deadlinesFromAnyNanoTimeLeaveTheWholeWaitRemaining() {
        long seed = seed();
        SplittableRandom random = new SplittableRandom(seed ^ 0x5DEECE66DL);
        for (long wait : values(seed)) {
            long now = random.nextBoolean() ? random.nextLong() : NAMED[random.nextInt(NAMED.length)];
            long deadline = LockDurations.deadline(now, wait);
            BigInteger expectedWait = clampToForEver(BigInteger.valueOf(wait)).max(BigInteger.ZERO);
            assertThat(deadline).as("seed %d: deadline(%d, %d)", seed, now, wait)
                    .isEqualTo(wrapped(BigInteger.valueOf(now).add(expectedWait)));
            assertThat(LockDurations.remaining(deadline, now)).as("seed %d: remaining at the start of a wait of %d ns "
                    + "from nanoTime %d", seed, wait, now).isEqualTo(expectedWait.longValueExact());
            // still to come just before the end, over just after: "for ever" never turns into "already over"
            if (expectedWait.signum() > 0) {
                assertThat(deadline - (now + expectedWait.longValue() - 1)).as("seed %d", seed).isPositive();
            }
            assertThat(LockDurations.remaining(deadline, now + expectedWait.longValue() + 1)).isZero();
        }
    }

    @Test
    void saturatedAdditionAndMultiplicationMatchExactArithmeticClamped() {
        long seed = seed();
        List<Long> values = values(seed);
        SplittableRandom random = new SplittableRandom(seed + 1);
        for (long a : values) {
            long b = values.get(random.nextInt(values.size()));
            assertThat(LockDurations.saturatedAdd(a, b)).as("seed %d: %d + %d", seed, a, b)
                    .isEqualTo(saturated(BigInteger.valueOf(a).add(BigInteger.valueOf(b))));
            long x = Math.abs(a >> random.nextInt(64));
            long y = random.nextLong(0, 1L << random.nextInt(1, 63));
            assertThat(LockDurations.saturatedMultiply(x, y)).as("seed %d: %d * %d", seed, x, y)
                    .isEqualTo(saturated(BigInteger.valueOf(x).multiply(BigInteger.valueOf(y))));
        }
    }

    @Test
    void whatUsersWriteIsZeroOrAtLeastOneMilliOrRefusedNamingWhereItCameFrom() {
        assertThat(LockDurations.checked("distlock.wait-time", Duration.ZERO, "0")).isEqualTo(Duration.ZERO);
        assertThat(LockDurations.checked("distlock.wait-time", Duration.ofMillis(1), "0")).isEqualTo(Duration.ofMillis(1));
        assertThat(LockDurations.checked("distlock.wait-time", null, "0")).isNull();
        assertThat(LockDurations.checked("distlock.wait-time", Duration.ofSeconds(Long.MAX_VALUE, 999_999_999), "0"))
                .isEqualTo(LockDurations.FOR_EVER);
        assertThatThrownBy(() -> LockDurations.checked("distlock.wait-time", Duration.ofNanos(999_999), "0"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("distlock.wait-time must be 0 or at least 1 ms, was PT0.000999999S");
        assertThatThrownBy(() -> LockDurations.checked("LockOptions.leaseTime", Duration.ofNanos(1), "0 (watchdog)"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("LockOptions.leaseTime must be 0 (watchdog) or at least 1 ms, was PT0.000000001S");
        assertThatThrownBy(() -> LockDurations.checked("LockOptions.waitTime", Duration.ofSeconds(Long.MIN_VALUE), "0"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("LockOptions.waitTime must be 0 or at least 1 ms, was PT-");
        assertThatThrownBy(() -> LockDurations.checkedPositive("distlock.jdbc.min-poll-interval", Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("distlock.jdbc.min-poll-interval must be at least 1 ms, was PT0S");
        assertThat(LockDurations.checkedPositive("distlock.jdbc.min-poll-interval", Duration.ofSeconds(Long.MAX_VALUE)))
                .isEqualTo(LockDurations.FOR_EVER);
        assertThatThrownBy(() -> LockDurations.checkedBetween("distlock.watchdog-timeout",
                Duration.ofSeconds(Long.MAX_VALUE, 999_999_999), LockDurations.MIN_WATCHDOG_TIMEOUT,
                LockDurations.MAX_WATCHDOG_TIMEOUT)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("distlock.watchdog-timeout must be between PT0.1S and PT24H, was PT2562047788015215H30M7.999999999S");
    }

    @Test
    void forEverIsAHundredYearsAndLeavesNanoTimeArithmeticWrapSafe() {
        assertThat(LockDurations.FOR_EVER).isEqualTo(Duration.ofDays(36_500));
        assertThat(BigInteger.valueOf(LockDurations.FOR_EVER_NANOS)).isEqualTo(FOR_EVER);
        assertThat(LockDurations.FOR_EVER_NANOS).isLessThan(Long.MAX_VALUE / 2);
        // Redis PEXPIRE takes it (its limit: the expiry time in ms must fit a long)
        assertThat(LockDurations.ceilMillis(Long.MAX_VALUE) + System.currentTimeMillis()).isPositive();
        // the JDBC tables store the expiry in microseconds since the epoch in a BIGINT
        assertThat(LockDurations.ceilMicros(Long.MAX_VALUE) + System.currentTimeMillis() * 1_000).isPositive();
        // etcd's largest lease TTL is 9,000,000,000 s
        assertThat(LockDurations.ceilSeconds(Long.MAX_VALUE)).isLessThan(9_000_000_000L);
    }
}

package io.github.distlock.benchmarks;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import io.github.distlock.benchmarks.HotKeyComparison.Result;
import io.github.distlock.benchmarks.HotKeyComparison.Run;
import io.github.distlock.benchmarks.HotKeyComparison.Settings;
import io.github.distlock.benchmarks.HotKeyComparison.Variant;
import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs {@link HotKeyComparison} for a moment (4 threads, 0.4 s per variant), so a change that breaks it shows up in the
 * build: every row is there, with cycles, sane fairness and latency figures, commands and CPU counted, no overlap or lost
 * update, and no lock left in Redis. Measures nothing worth reading.
 */
class HotKeyComparisonSmokeTest {

    @Test
    void everyVariantRunsContendedAndUncontendedAndTheTableHasEveryRow() throws Exception {
        Settings settings = new Settings(4, 1, 400, 200, 200);
        Run run;
        List<String> left;
        try (BenchEnvironment env = BenchEnvironment.start(RedissonVariant.DEFAULT)) {
            run = HotKeyComparison.measure(env, settings);
            left = ((List<?>) RespClient.callOnce(env.server().port(), "KEYS", "*bench:hk-*")).stream()
                    .map(Object::toString).toList();
            // a FAIR queue's close count outlives its queue by at most twice the entry time to live (a third of the
            // watchdog timeout, at most 5 s): expiring, not left behind
            for (String count : left.stream().filter(key -> key.startsWith("distlock_closes:")).toList()) {
                assertThat((Long) RespClient.callOnce(env.server().port(), "PTTL", count)).as(count)
                        .isBetween(1L, 10_000L);
            }
        }
        // every lock released: no lock hash, no fair lock's queue or timeout set left behind
        assertThat(left).filteredOn(key -> !key.startsWith("distlock_closes:")).isEmpty();

        List<Result> results = run.results();
        assertThat(results).extracting(Result::variant)
                .containsExactly(Variant.RLOCK, Variant.RFAIRLOCK, Variant.REENTRANT, Variant.FAIR,
                        Variant.RLOCK, Variant.RFAIRLOCK, Variant.REENTRANT, Variant.FAIR);
        assertThat(results).extracting(Result::threads).containsExactly(4, 4, 4, 4, 1, 1, 1, 1);
        for (Result r : results) {
            String row = r.variant().label + " at " + r.threads();
            assertThat(r.failures()).as(row).isEmpty();
            assertThat(r.overlaps()).as(row).isZero();
            assertThat(r.lostUpdates()).as(row).isZero();
            assertThat(r.cycles()).as(row).isPositive();
            assertThat(r.cyclesPerSecond()).as(row).isPositive();
            assertThat(r.vsRLockPerRound()).as(row).hasSize(1);
            assertThat(r.vsRLock()).as(row).isPositive();
            assertThat(r.acquireP50()).as(row).isPositive().isLessThanOrEqualTo(r.acquireP99());
            assertThat(r.acquireP99()).as(row).isLessThanOrEqualTo(r.acquireP999());
            // all cycles are the threads' acquisitions; fairness is a ratio in (0, 1]
            assertThat(r.minPerThread()).as(row).isPositive().isLessThanOrEqualTo(r.maxPerThread());
            assertThat(r.fairness()).as(row).isGreaterThan(0).isLessThanOrEqualTo(1);
            // at least the lock and the unlock script, each of them counted, plus the commands they run
            assertThat(r.commandsPerCycle()).as(row).isGreaterThanOrEqualTo(2);
            assertThat(r.commandsByName()).as(row).containsKey("evalsha");
            assertThat(r.redisCpuUsPerCycle()).as(row).isNotNegative();
            assertThat(r.clientCpuUsPerCycle()).as(row).isPositive();
            if (r.contended()) {
                assertThat(r.handoffs() + r.selfRegrabs()).as(row).isEqualTo(r.cycles() - 1);
                assertThat(r.handoffs()).as(row).isPositive();
                assertThat(r.handoffP50()).as(row).isPositive().isLessThanOrEqualTo(r.handoffP99());
            }
            else {
                // one thread: every cycle but the first re-takes its own lock
                assertThat(r.selfRegrabs()).as(row).isEqualTo(r.cycles() - 1);
                assertThat(r.fairness()).as(row).isEqualTo(1);
            }
        }
        // the ratios are to RLock: its own are 1
        assertThat(results.get(0).vsRLock()).isEqualTo(1);
        assertThat(results.get(4).vsRLock()).isEqualTo(1);

        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        HotKeyComparison.print(run, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String table = bytes.toString(StandardCharsets.UTF_8);
        for (Variant variant : Variant.values()) {
            assertThat(table).contains("| " + variant.label + " | 4 | ").contains("| " + variant.label + " | 1 | ");
        }
        assertThat(table).contains("| lock | threads | cycles/s |").contains("0 overlaps, 0 lost updates")
                .doesNotContain("failed calls {");
    }
}

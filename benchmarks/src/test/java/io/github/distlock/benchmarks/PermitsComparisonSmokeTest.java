package io.github.distlock.benchmarks;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import io.github.distlock.benchmarks.PermitsComparison.Result;
import io.github.distlock.benchmarks.PermitsComparison.Run;
import io.github.distlock.benchmarks.PermitsComparison.Settings;
import io.github.distlock.benchmarks.PermitsComparison.Variant;
import io.github.distlock.benchmarks.PermitsComparison.Workload;
import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs {@link PermitsComparison} for a moment (1 round of 0.3 s per row; 1 and 4 threads on own keys, 8 on one key;
 * bodies hold 5 ms so that holders of the shared key overlap), so a change that breaks it shows up in the build: every
 * row is there with cycles, no key ever had more holders at once than its permits (and the shared key had several),
 * every body ran once per acquisition, commands and CPU were counted, and nothing is left in Redis. Measures nothing
 * worth reading.
 */
class PermitsComparisonSmokeTest {

    @Test
    void everyVariantRunsOnEveryWorkloadWithinItsPermits() throws Exception {
        Settings settings = new Settings(1, 300, 100,
                List.of(new Workload(1, false), new Workload(4, false), new Workload(8, true)), 5);
        Run run;
        List<String> left;
        try (BenchEnvironment env = BenchEnvironment.start(RedissonVariant.DEFAULT)) {
            run = PermitsComparison.measure(env, settings);
            left = ((List<?>) RespClient.callOnce(env.server().port(), "KEYS", "*bench:pc-*")).stream()
                    .map(Object::toString).toList();
        }
        // every lock and every permit given back: no lock hash, no permits set left
        assertThat(left).isEmpty();

        List<Result> results = run.results();
        assertThat(results).extracting(Result::variant).containsExactly(Variant.REENTRANT, Variant.PERMITS,
                Variant.REENTRANT, Variant.PERMITS, Variant.REENTRANT, Variant.PERMITS);
        assertThat(results).extracting(r -> r.workload().threads()).containsExactly(1, 1, 4, 4, 8, 8);
        for (Result r : results) {
            String row = r.variant().label + " on " + r.workload();
            assertThat(r.failures()).as(row).isEmpty();
            assertThat(r.cycles()).as(row).isPositive();
            assertThat(r.bodyRuns()).as(row).isEqualTo(r.cycles());
            assertThat(r.cyclesPerSecond()).as(row).isPositive();
            assertThat(r.vsReentrantPerRound()).as(row).hasSize(1);
            assertThat(r.vsReentrant()).as(row).isPositive();
            assertThat(r.acquireP50()).as(row).isPositive().isLessThanOrEqualTo(r.acquireP99());
            assertThat(r.minPerThread()).as(row).isPositive().isLessThanOrEqualTo(r.maxPerThread());
            // the safety check of the harness: never more holders of a key at once than its permits
            assertThat(r.mostHolders()).as(row).isBetween(1, r.variant().permits);
            assertThat(r.withinPermits()).as(row).isTrue();
            if (r.variant() == Variant.PERMITS && r.workload().oneKey()) {
                // 8 threads holding 5 ms each: the semaphore admits several at once, and the gauge sees it (so it would
                // also see a fourth holder)
                assertThat(r.mostHolders()).as(row).isGreaterThanOrEqualTo(2);
            }
            // at least an acquire and a release script, each counted with the commands inside it
            assertThat(r.commandsPerCycle()).as(row).isGreaterThanOrEqualTo(2);
            assertThat(r.commandsByName()).as(row).containsKey(r.variant() == Variant.PERMITS ? "zadd" : "hexists");
            assertThat(r.redisCpuUsPerCycle()).as(row).isNotNegative();
            assertThat(r.clientCpuUsPerCycle()).as(row).isPositive();
        }
        assertThat(results.get(0).vsReentrant()).isEqualTo(1);

        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PermitsComparison.print(run, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String table = bytes.toString(StandardCharsets.UTF_8);
        for (Variant variant : Variant.values()) {
            assertThat(table).contains("| " + variant.label + " | own keys | 1 | ")
                    .contains("| " + variant.label + " | own keys | 4 | ")
                    .contains("| " + variant.label + " | one key | 8 | ");
        }
        assertThat(table).contains("| lock | keys | threads | cycles/s |").contains("of 3 |")
                .doesNotContain("BROKEN").doesNotContain("failed calls {");
    }
}

package io.github.distlock.benchmarks;

import java.util.Map;

import io.github.distlock.benchmarks.BackendComparison.Backend;
import io.github.distlock.benchmarks.BackendComparison.Result;
import io.github.distlock.benchmarks.BackendComparison.Setup;
import io.github.distlock.benchmarks.BackendComparison.Workload;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

/**
 * Runs {@link BackendComparison} for a moment on every backend and workload, so a change that breaks it (or a backend
 * that stops releasing under it) shows up in the build. Measures nothing worth reading.
 */
class BackendComparisonSmokeTest {

    @Test
    void everyBackendLocksAndReleasesOnEveryWorkload() throws Exception {
        try (Setup setup = Setup.start()) {
            var results = BackendComparison.measure(setup, 1, 300, 100);

            assertThat(results).extracting(Result::workload, Result::backend).containsExactly(
                    tuple(Workload.ONE_THREAD, Backend.REDIS), tuple(Workload.ONE_THREAD, Backend.POSTGRES),
                    tuple(Workload.ONE_THREAD, Backend.POSTGRES_ASYNC), tuple(Workload.DISTINCT, Backend.REDIS),
                    tuple(Workload.DISTINCT, Backend.POSTGRES), tuple(Workload.DISTINCT, Backend.POSTGRES_ASYNC),
                    tuple(Workload.HOT_KEY, Backend.REDIS), tuple(Workload.HOT_KEY, Backend.POSTGRES),
                    tuple(Workload.HOT_KEY, Backend.POSTGRES_ASYNC));
            for (Result r : results) {
                String what = r.backend().label + ", " + r.workload().label;
                assertThat(r.cycles()).as(what).isPositive();
                assertThat(r.minPerThread()).as(what + ": every thread got the lock").isPositive();
                assertThat(r.failures()).as(what).isEmpty();
                assertThat(r.overlaps()).as(what + ": two holders at once").isZero();
                if (r.backend() == Backend.REDIS) {
                    // at least the lock script and the unlock script per cycle
                    assertThat(r.opsPerCycle()).as(what).isGreaterThanOrEqualTo(2);
                }
                else {
                    // one INSERT ... ON CONFLICT takes the lock, one UPDATE gives it back: both counted by
                    // pg_stat_statements in the application's database
                    assertThat(r.opsByName()).as(what).hasEntrySatisfying(
                            r.opsByName().keySet().stream().filter(q -> q.startsWith("INSERT INTO distlock_lock"))
                                    .findFirst().orElse("no INSERT counted"),
                            perCycle -> assertThat(perCycle).isGreaterThanOrEqualTo(1));
                    assertThat(r.opsPerCycle()).as(what).isGreaterThanOrEqualTo(2);
                }
            }
            // every lock released: no row with an owner in either database, no lock key in Redis
            assertThat(setup.heldLocks()).containsExactlyInAnyOrderEntriesOf(
                    Map.of(Backend.REDIS, 0L, Backend.POSTGRES, 0L, Backend.POSTGRES_ASYNC, 0L));
        }
    }
}

package io.github.distlock.benchmarks;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

import io.github.distlock.benchmarks.BackendComparison.Backend;
import io.github.distlock.benchmarks.BackendComparison.Result;
import io.github.distlock.benchmarks.BackendComparison.Setup;
import io.github.distlock.benchmarks.BackendComparison.Target;
import io.github.distlock.benchmarks.BackendComparison.Workload;
import io.github.distlock.testsupport.EtcdServer;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs {@link BackendComparison} for a moment on every default backend (Redis, PostgreSQL, ZooKeeper, etcd) and
 * workload, so a change that breaks it (or a backend that stops releasing under it) shows up in the build. Measures
 * nothing worth reading. Needs an {@code etcd} binary, as the etcd module's tests do (24–32 s under load here, ~19 s of
 * it starting the servers and applications).
 */
class BackendComparisonSmokeTest {

    @Test
    void everyBackendLocksAndReleasesOnEveryWorkload() throws Exception {
        // as in the etcd module's tests: without an etcd binary, fail saying how to install one, or (with
        // -Ddistlock.etcd.skip-if-missing=true) report this test skipped
        EtcdServer.binary();
        try (Setup setup = Setup.start()) {
            assertThat(setup.targets).extracting(t -> t.backend)
                    .containsExactly(Backend.REDIS, Backend.POSTGRES, Backend.ZOOKEEPER, Backend.ETCD);

            // the count of held locks must see a held lock on each backend, or "0 left held" below would prove nothing
            for (Target target : setup.targets) {
                AtomicReference<Map<Backend, Long>> whileHeld = new AtomicReference<>();
                target.service.waitWatchdogRun(target.id(0), () -> {
                    try {
                        whileHeld.set(setup.heldLocks());
                    }
                    catch (Exception ex) {
                        throw new IllegalStateException(ex);
                    }
                });
                Map<Backend, Long> expected = new LinkedHashMap<>();
                setup.targets.forEach(t -> expected.put(t.backend, (t == target) ? 1L : 0L));
                assertThat(whileHeld.get()).as("locks held while one is held on " + target.backend.label)
                        .containsExactlyInAnyOrderEntriesOf(expected);
            }

            var results = BackendComparison.measure(setup, 1, 300, 100);

            List<String> expectedOrder = new ArrayList<>();
            for (Workload workload : Workload.values()) {
                for (Backend backend : BackendComparison.DEFAULT_BACKENDS) {
                    expectedOrder.add(workload + "/" + backend);
                }
            }
            assertThat(results).extracting(r -> r.workload() + "/" + r.backend())
                    .containsExactlyElementsOf(expectedOrder);
            for (Result r : results) {
                String what = r.backend().label + ", " + r.workload().label;
                assertThat(r.cycles()).as(what).isPositive();
                assertThat(r.minPerThread()).as(what + ": every thread got the lock").isPositive();
                assertThat(r.failures()).as(what).isEmpty();
                assertThat(r.overlaps()).as(what + ": two holders at once").isZero();
                // Redis: at least the lock script and the unlock script; PostgreSQL: INSERT ... ON CONFLICT and UPDATE;
                // ZooKeeper: create and delete of the lock node (and a getChildren); etcd: the create transaction and
                // the delete
                assertThat(r.opsPerCycle()).as(what + ": operations per cycle " + r.opsByName())
                        .isGreaterThanOrEqualTo(2);
                if (r.backend() == Backend.POSTGRES) {
                    assertThat(r.opsByName()).as(what).hasEntrySatisfying(
                            r.opsByName().keySet().stream().filter(q -> q.startsWith("INSERT INTO distlock_lock"))
                                    .findFirst().orElse("no INSERT counted"),
                            perCycle -> assertThat(perCycle).isGreaterThanOrEqualTo(1));
                }
                if (r.backend() == Backend.ETCD) {
                    assertThat(r.opsByName()).as(what).hasEntrySatisfying("Txn",
                            perCycle -> assertThat(perCycle).isGreaterThanOrEqualTo(1));
                }
                assertThat(r.serverCpuUsPerCycle()).as(what + ": server CPU").isPositive();
                if (r.workload().hot) {
                    // 8 threads on one key for 0.3 s: some calls find the lock taken by another thread
                    assertThat(r.handoffs()).as(what + ": hand-offs").isPositive();
                    assertThat(r.handoffP50Us()).as(what + ": hand-off p50").isPositive()
                            .isLessThanOrEqualTo(r.handoffP99Us());
                }
                else {
                    assertThat(r.handoffs()).as(what).isZero();
                }
            }
            // every lock released: no Redis lock key, no row with an owner, no ZooKeeper lock node, no etcd key
            assertThat(setup.heldLocks()).containsExactlyInAnyOrderEntriesOf(Map.of(Backend.REDIS, 0L,
                    Backend.POSTGRES, 0L, Backend.ZOOKEEPER, 0L, Backend.ETCD, 0L));
        }
    }
}

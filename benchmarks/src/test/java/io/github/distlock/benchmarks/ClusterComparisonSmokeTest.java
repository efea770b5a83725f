package io.github.distlock.benchmarks;

import java.util.ArrayList;
import java.util.List;

import io.github.distlock.benchmarks.ClusterComparison.Result;
import io.github.distlock.benchmarks.ClusterComparison.Setup;
import io.github.distlock.benchmarks.ClusterComparison.Target;
import io.github.distlock.benchmarks.ClusterComparison.Variant;
import org.junit.jupiter.api.Test;
import org.redisson.api.RedissonClient;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs {@link ClusterComparison} for a moment on every deployment, so a change that breaks it (or the premise its
 * interpretation rests on: a {@code WAIT} per lock script with replicas, none without) shows up in the build. Measures
 * nothing worth reading.
 */
class ClusterComparisonSmokeTest {

    @Test
    void everyDeploymentLocksAndReleasesAndOnlyTheReplicatedOnesWait() throws Exception {
        try (Setup setup = Setup.start()) {
            List<Result> results = ClusterComparison.measure(setup, new int[] {2}, 1, 300);

            assertThat(results).extracting(Result::variant).containsExactly(Variant.values());
            for (Result r : results) {
                assertThat(r.cycles()).as(r.variant().label).isPositive();
                assertThat(r.failures()).as(r.variant().label).isEmpty();
                // lock script + unlock script + the latch DEL at least, wherever the lock lives
                assertThat(r.commandsPerCycle()).as(r.variant().label).isGreaterThanOrEqualTo(3);
                boolean replicated = r.variant() == Variant.REPLICATED || r.variant() == Variant.REPLICATED_UNCHECKED;
                if (replicated) {
                    assertThat(r.waitsPerCycle()).as(r.variant().label).isGreaterThanOrEqualTo(1);
                }
                else {
                    assertThat(r.waitsPerCycle()).as(r.variant().label).isZero();
                }
            }
            // every lock released: no lock hash left on any deployment
            for (Target target : setup.targets) {
                List<String> left = new ArrayList<>();
                target.context.getBean(RedissonClient.class).getKeys().getKeysByPattern("*bench:c*").forEach(left::add);
                assertThat(left).as(target.variant.label).isEmpty();
            }
        }
    }
}

package io.github.distlock.topology;

import org.junit.jupiter.api.Test;

/**
 * Redis Cluster: the master owning the slots of held and contended locks is SIGKILLed under load; see
 * {@link FailoverScenario} for what runs and {@link FailoverAssertions} for what must hold.
 */
class ClusterFailoverTest {

    @Test
    void masterOfHeldLocksKilledUnderLoadCallsFailTypedAndBoundedNoBodyRunsUnlockedLostLocksAreReportedAppsRecover()
            throws Throwable {
        try (Topology topology = Topology.cluster()) {
            FailoverScenario scenario = new FailoverScenario(topology);
            try {
                scenario.run();
            }
            finally {
                System.out.print(scenario.report());
            }
            FailoverAssertions.assertSafeReportedAndRecovered(scenario);
        }
    }
}

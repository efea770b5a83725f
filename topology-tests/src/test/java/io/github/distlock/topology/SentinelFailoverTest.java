package io.github.distlock.topology;

import org.junit.jupiter.api.Test;

/**
 * Sentinel: the master is SIGKILLed under load, the sentinels promote the replica; see
 * {@link FailoverScenario} for what runs and {@link FailoverAssertions} for what must hold.
 */
class SentinelFailoverTest {

    @Test
    void masterOfHeldLocksKilledUnderLoadCallsFailTypedAndBoundedNoBodyRunsUnlockedLostLocksAreReportedAppsRecover()
            throws Throwable {
        try (Topology topology = Topology.sentinel()) {
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

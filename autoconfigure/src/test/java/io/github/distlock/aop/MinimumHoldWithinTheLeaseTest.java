package io.github.distlock.aop;

import java.lang.reflect.Method;
import java.time.Duration;

import io.github.distlock.DistributedLock;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A minimum hold must not outlast the lease, whichever way the lease is set: the annotation resolves the configured
 * default lease ({@code distlock.lease-time}) into its options, so LockOptions' rule refuses it at startup, as the
 * template refuses the same options at the call (see LockTemplateContractTest).
 */
class MinimumHoldWithinTheLeaseTest {

    static class Jobs {

        @DistributedLock(key = "'nightly'", holdAtLeast = 200)
        public void holdsLongerThanTheDefaultLease() {
        }

        @DistributedLock(key = "'nightly'", holdAtLeast = 200, leaseTime = 0)
        public void holdsUnderTheWatchdog() {
        }
    }

    @Test
    void aMinimumHoldLongerThanTheDefaultLeaseFailsTheStartup() throws Exception {
        LockOperationSource operations = new LockOperationSource(null, null, Duration.ZERO, Duration.ofMillis(100));
        Method method = Jobs.class.getMethod("holdsLongerThanTheDefaultLease");
        assertThatThrownBy(() -> operations.getOperation(method, Jobs.class))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("Jobs.holdsLongerThanTheDefaultLease")
                .hasMessageContaining("holdAtLeast (PT0.2S) must not exceed the fixed leaseTime (PT0.1S)");
        assertThat(operations.getOperation(Jobs.class.getMethod("holdsUnderTheWatchdog"), Jobs.class).options()
                .holdAtLeast()).isEqualTo(Duration.ofMillis(200));
    }
}

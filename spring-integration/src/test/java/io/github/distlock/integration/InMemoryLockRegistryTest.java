package io.github.distlock.integration;

import java.time.Duration;
import java.util.List;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LockListener;
import io.github.distlock.LockTemplate;
import io.github.distlock.test.InMemoryLockProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link DistlockLockRegistryContract} on distlock-test's in-memory backend. */
class InMemoryLockRegistryTest extends DistlockLockRegistryContract {

    private final InMemoryLockProvider provider = new InMemoryLockProvider();

    @Override
    protected LockTemplate newInstance(List<LockListener> listeners) {
        return new DefaultLockTemplate(provider, "lock:", Duration.ZERO, null, listeners);
    }

    /** The work guarded by a lock that was taken away meanwhile may have run beside another holder: unlock says so. */
    @Test
    void anUnlockAfterTheBackendTookTheLockAwayThrowsAndLeavesNothingHeld() throws Exception {
        DistlockLock lock = one.obtain(key);
        lock.lock();
        assertThat(provider.expire(lock.fullKey())).isTrue();
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'" + lock.fullKey() + "' was lost while held");
        assertThat(lock.isHeldByCurrentThread()).isFalse();
        assertThat(provider.isLocked(lock.fullKey())).isFalse();
    }

    /**
     * A re-entry checks the hold first: one taken away is taken anew, for the owner's thread, when it is free; the new
     * backend hold lasts until the outermost unlock, which reports the loss (the outer work may have run beside another
     * holder).
     */
    @Test
    void aReentryAfterTheBackendTookTheLockAwayTakesItAnewForTheOuterHoldWhoseUnlockReportsTheLoss() {
        DistlockLock lock = one.obtain(key);
        lock.lock();
        long firstToken = lock.fencingToken().orElseThrow();
        provider.expire(lock.fullKey());
        assertThat(lock.tryLock()).isTrue();
        assertThat(provider.isLocked(lock.fullKey())).as("held in the backend again").isTrue();
        assertThat(lock.fencingToken().orElseThrow()).as("a new hold's token").isGreaterThan(firstToken);
        lock.unlock();
        assertThat(provider.isLocked(lock.fullKey())).as("still held for the outer hold").isTrue();
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("was lost while held");
        assertThat(provider.isLocked(lock.fullKey())).as("released with the outer hold").isFalse();
        assertThat(lock.isHeldByCurrentThread()).isFalse();
    }

    @AfterEach
    void closeProvider() {
        provider.close();
    }
}

package io.github.distlock.jdbc;

import java.time.Duration;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.test.LockProviderContractTest;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The provider contract on one database; a subclass per database registers it ({@link #database()}).
 */
abstract class JdbcLockProviderContract extends LockProviderContractTest {

    /** Short, so that the renewal and dead-holder tests take seconds: the suite waits for it. */
    static final Duration WATCHDOG = Duration.ofSeconds(1);

    abstract Database database();

    static JdbcLockOptions options() {
        return JdbcLockOptions.defaults().withWatchdogTimeout(WATCHDOG);
    }

    @Override
    protected LockProvider createProvider() {
        return new JdbcLockProvider(database().dataSource(), options());
    }

    @Override
    protected Duration watchdogTimeout() {
        return WATCHDOG;
    }

    /** Another process: a provider of its own (own instance id, own renewal), closed without a release. */
    @Override
    protected void acquireAndAbandon(LockRequest request) {
        try (JdbcLockProvider other = new JdbcLockProvider(database().dataSource(), options())) {
            LockHandle handle = other.acquire(request).join();
            assertThat(handle).as("the lock to abandon").isNotNull();
        }
    }

    /** An operator deleting the row: the holder's next renewal finds it gone. */
    @Override
    protected void expireBehindItsBack(String key) {
        assertThat(database().update("DELETE FROM distlock_lock WHERE lock_key = ?", key)).as("rows deleted").isEqualTo(1);
    }
}

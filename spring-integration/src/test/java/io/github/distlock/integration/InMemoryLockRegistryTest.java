package io.github.distlock.integration;

import java.time.Duration;
import java.util.List;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LockListener;
import io.github.distlock.LockTemplate;
import io.github.distlock.test.InMemoryLockProvider;
import org.junit.jupiter.api.AfterEach;

/** {@link DistlockLockRegistryContract} on distlock-test's in-memory backend. */
class InMemoryLockRegistryTest extends DistlockLockRegistryContract {

    private final InMemoryLockProvider provider = new InMemoryLockProvider();

    @Override
    protected LockTemplate newInstance(List<LockListener> listeners) {
        return new DefaultLockTemplate(provider, "lock:", Duration.ZERO, null, listeners);
    }

    @AfterEach
    void closeProvider() {
        provider.close();
    }
}

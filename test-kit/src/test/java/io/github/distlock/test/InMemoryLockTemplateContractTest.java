package io.github.distlock.test;

import java.time.Duration;

import io.github.distlock.spi.LockProvider;

/** The template's multi-key locks, re-entry and give-backs work on the in-memory provider. */
class InMemoryLockTemplateContractTest extends LockTemplateContractTest {

    @Override
    protected LockProvider createProvider() {
        return new InMemoryLockProvider(Duration.ofSeconds(1));
    }

    /** Two in-memory providers share nothing: the second instance is a second template on the same provider. */
    @Override
    protected LockProvider createSecondInstance() {
        return provider();
    }
}

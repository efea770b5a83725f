package io.github.distlock.test;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** The in-memory provider keeps the provider contract. */
class InMemoryLockProviderContractTest extends LockProviderContractTest {

    @Override
    protected boolean closesKeys() {
        return true;
    }

    @Override
    protected LockProvider createProvider() {
        return new InMemoryLockProvider(watchdogTimeout());
    }

    private InMemoryLockProvider inMemory() {
        return (InMemoryLockProvider) provider();
    }

    @Override
    protected Duration watchdogTimeout() {
        return Duration.ofSeconds(1);
    }

    @Override
    protected void acquireAndAbandon(LockRequest request) {
        LockHandle handle = provider().acquire(request).join();
        assertThat(handle).as("the lock to abandon").isNotNull();
        inMemory().abandon(handle);
    }

    @Override
    protected void expireBehindItsBack(String key) {
        assertThat(inMemory().expire(key)).as("something held %s", key).isTrue();
    }

    @Override
    protected void awaitQueued(LockType type, String key, int count, CompletableFuture<LockHandle> latest) {
        await().atMost(slack()).until(() -> inMemory().waiting(key) >= count);
    }
}

package io.github.distlock.test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LockContext;
import io.github.distlock.LockOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A lock taken in a transaction is released when the transaction completes; a transaction manager may complete it on
 * another thread (a JTA timeout's reaper). The lock is then released, once, but the thread that took it keeps the
 * deferred frame: its next request, on the same pooled thread, sees the key as still held by itself and fails to take
 * the free lock. Fails safe (never two holders). Open: listed in docs/open-defects.md.
 */
@Tag("open-defect")
class ATransactionCompletedOnAnotherThreadLeavesItsCallerFreeToLockTest {

    private final InMemoryLockProvider provider = new InMemoryLockProvider(Duration.ofSeconds(30));

    private final DefaultLockTemplate locks = new DefaultLockTemplate(provider, "lock:", Duration.ZERO, null, List.of());

    @AfterEach
    void close() {
        locks.shutdown();
        provider.close();
    }

    @Test
    void theNextRequestOnThePooledThreadTakesTheReleasedLock() throws Exception {
        ExecutorService pooled = Executors.newSingleThreadExecutor();
        try {
            List<TransactionSynchronization> completion = pooled.submit(() -> {
                TransactionSynchronizationManager.initSynchronization();
                try {
                    locks.execute("tx", LockOptions.waitFor(Duration.ZERO), () -> "ok");
                    return TransactionSynchronizationManager.getSynchronizations();
                }
                finally {
                    TransactionSynchronizationManager.clearSynchronization();
                }
            }).get(5, TimeUnit.SECONDS);
            Thread reaper = new Thread(() -> completion.forEach(
                    synchronization -> synchronization.afterCompletion(TransactionSynchronization.STATUS_COMMITTED)));
            reaper.start();
            reaper.join(5000);
            await().atMost(5, TimeUnit.SECONDS).until(() -> !provider.isLocked("lock:tx"));

            String next = pooled.submit(() -> {
                try {
                    return LockContext.heldKeys() + " " + locks.execute("tx", LockOptions.waitFor(Duration.ZERO),
                            () -> "ran");
                }
                catch (RuntimeException ex) {
                    return LockContext.heldKeys() + " " + ex;
                }
            }).get(5, TimeUnit.SECONDS);
            assertThat(next).isEqualTo("[] ran");
        }
        finally {
            pooled.shutdownNow();
        }
    }
}

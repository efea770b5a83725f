package io.github.distlock.integration;

import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import io.github.distlock.LockEvent;
import io.github.distlock.LockListener;
import io.github.distlock.LockTemplate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The {@link java.util.concurrent.locks.Lock} semantics of {@link DistlockLockRegistry} that Spring Integration's
 * aggregators, {@code LockRequestHandlerAdvice} and {@code LockRegistryLeaderInitiator} rely on, as its own registries
 * give them, on one backend. Two registries on two templates are two instances of an application.
 */
abstract class DistlockLockRegistryContract {

    /** A template (one application instance) on the backend under test, with the key prefix {@code lock:}. */
    protected abstract LockTemplate newInstance(List<LockListener> listeners);

    protected final Queue<String> acquiredKeys = new ConcurrentLinkedQueue<>();

    protected DistlockLockRegistry one;

    protected DistlockLockRegistry other;

    protected String key;

    private final ExecutorService threads = Executors.newCachedThreadPool();

    @BeforeEach
    void twoInstances() {
        LockListener recorder = new LockListener() {
            @Override
            public void onAcquired(LockEvent event) {
                acquiredKeys.add(event.key());
            }
        };
        one = new DistlockLockRegistry(newInstance(List.of(recorder)), DistlockLockRegistry.DEFAULT_KEY_PREFIX, true);
        other = new DistlockLockRegistry(newInstance(List.of()), DistlockLockRegistry.DEFAULT_KEY_PREFIX, true);
        key = "orders-" + UUID.randomUUID();
    }

    @AfterEach
    void stopThreads() {
        threads.shutdownNow();
    }

    private <T> T onAnotherThread(java.util.concurrent.Callable<T> task) throws Exception {
        return threads.submit(task).get(10, TimeUnit.SECONDS);
    }

    @Test
    void anotherInstanceIsKeptOutWhileOneHoldsItAndGetsItOnceReleased() throws Exception {
        DistlockLock lock = one.obtain(key);
        lock.lock();
        try {
            assertThat(onAnotherThread(() -> other.obtain(key).tryLock())).as("other instance while held").isFalse();
        }
        finally {
            lock.unlock();
        }
        assertThat(onAnotherThread(() -> {
            DistlockLock theirs = other.obtain(key);
            boolean taken = theirs.tryLock();
            theirs.unlock();
            return taken;
        })).as("other instance after the release").isTrue();
        // the registry key went through the registry's and distlock's prefixes, and distlock's listeners saw it
        assertThat(acquiredKeys).containsExactly("lock:integration:" + key);
    }

    @Test
    void theOwnerThreadReentersAndTheBackendLockLastsUntilItsLastUnlock() throws Exception {
        DistlockLock lock = one.obtain(key);
        lock.lock();
        assertThat(lock.tryLock()).as("re-entry by the owner thread").isTrue();
        lock.unlock();
        assertThat(onAnotherThread(() -> other.obtain(key).tryLock())).as("other instance after one of two unlocks")
                .isFalse();
        lock.unlock();
        assertThat(onAnotherThread(() -> other.obtain(key).tryLock())).as("other instance after the last unlock")
                .isTrue();
        assertThat(one.obtain(key)).as("one lock per key").isSameAs(lock);
    }

    @Test
    void anotherThreadOfTheSameInstanceIsKeptOutAndCantUnlock() throws Exception {
        DistlockLock lock = one.obtain(key);
        lock.lock();
        try {
            assertThat(onAnotherThread(() -> lock.tryLock())).as("another thread of the holding instance").isFalse();
            AtomicReference<Throwable> unlockFailure = new AtomicReference<>();
            onAnotherThread(() -> {
                try {
                    lock.unlock();
                }
                catch (Throwable ex) {
                    unlockFailure.set(ex);
                }
                return null;
            });
            assertThat(unlockFailure.get()).isInstanceOf(IllegalMonitorStateException.class)
                    .hasMessageContaining("lock:integration:" + key).hasMessageContaining("does not hold");
            assertThat(onAnotherThread(() -> other.obtain(key).tryLock())).as("still held after the refused unlock")
                    .isFalse();
        }
        finally {
            lock.unlock();
        }
    }

    @Test
    void aTimedTryLockGetsTheLockWhenTheHolderReleasesItAndGivesUpAtItsWait() throws Exception {
        DistlockLock lock = one.obtain(key);
        lock.lock();
        long start = System.nanoTime();
        assertThat(onAnotherThread(() -> other.obtain(key).tryLock(200, TimeUnit.MILLISECONDS))).isFalse();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(200));

        CountDownLatch waiting = new CountDownLatch(1);
        Future<Boolean> waiter = threads.submit(() -> {
            waiting.countDown();
            DistlockLock theirs = other.obtain(key);
            boolean taken = theirs.tryLock(10, TimeUnit.SECONDS);
            theirs.unlock();
            return taken;
        });
        waiting.await();
        lock.unlock();
        assertThat(waiter.get(10, TimeUnit.SECONDS)).as("the waiter once the holder released").isTrue();
    }

    @Test
    void lockInterruptiblyStopsWaitingOnAnInterruptAndLeavesNothingHeld() throws Exception {
        DistlockLock lock = one.obtain(key);
        lock.lock();
        AtomicReference<Thread> waiterThread = new AtomicReference<>();
        Future<Throwable> waiter = threads.submit(() -> {
            waiterThread.set(Thread.currentThread());
            try {
                other.obtain(key).lockInterruptibly();
                return null;
            }
            catch (InterruptedException ex) {
                return ex;
            }
        });
        await().atMost(Duration.ofSeconds(5)).until(() -> waiterThread.get() != null
                && waiterThread.get().getState() == Thread.State.WAITING);
        waiterThread.get().interrupt();
        assertThat(waiter.get(10, TimeUnit.SECONDS)).isInstanceOf(InterruptedException.class);
        lock.unlock();
        // the interrupted waiter holds nothing: what the backend still granted it is given back (asynchronously), and
        // another caller gets the lock
        await().atMost(Duration.ofSeconds(5)).until(() -> onAnotherThread(() -> {
            DistlockLock theirs = other.obtain(key);
            if (!theirs.tryLock()) {
                return false;
            }
            theirs.unlock();
            return true;
        }));
    }

    @Test
    void everyHoldCarriesAFencingTokenHigherThanThePreviousHolds() throws Exception {
        DistlockLock lock = one.obtain(key);
        lock.lock();
        long first = lock.fencingToken().orElseThrow();
        assertThat(one.fencingToken(key)).hasValue(first);
        lock.unlock();
        assertThat(lock.fencingToken()).as("after the release").isEmpty();
        long second = onAnotherThread(() -> {
            DistlockLock theirs = other.obtain(key);
            theirs.lock();
            try {
                return theirs.fencingToken().orElseThrow();
            }
            finally {
                theirs.unlock();
            }
        });
        assertThat(second).isGreaterThan(first);
    }

    @Test
    void aLockTakenWithATtlExpiresByItselfAfterIt() throws Exception {
        one.obtain(key).lock(Duration.ofMillis(300));
        assertThat(onAnotherThread(() -> other.obtain(key).tryLock(5, TimeUnit.SECONDS))).as("after the ttl")
                .isTrue();
    }

    @Test
    void renewLockChecksTheHoldAndConditionsAndNewTtlsAreRefused() throws Exception {
        DistlockLock lock = one.obtain(key);
        assertThatThrownBy(() -> one.renewLock(key)).isInstanceOf(IllegalMonitorStateException.class)
                .hasMessageContaining("lock:integration:" + key);
        lock.lock();
        try {
            one.renewLock(key);
            assertThatThrownBy(() -> one.renewLock(key, Duration.ofSeconds(5)))
                    .isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("renewLock(lockKey, ttl)");
            assertThatThrownBy(lock::newCondition).isInstanceOf(UnsupportedOperationException.class);
        }
        finally {
            lock.unlock();
        }
    }

    @Test
    void aMissingOrBlankKeyIsRefusedNamingObtain() {
        assertThatThrownBy(() -> one.obtain(null)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("DistlockLockRegistry.obtain");
        assertThatThrownBy(() -> one.obtain(" ")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("DistlockLockRegistry.obtain");
        assertThatThrownBy(() -> one.obtain(key).lock(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("lock(ttl)");
    }
}

package io.github.distlock.test;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/** The faults an {@link InMemoryLockProvider} injects when told to, seen through the SPI as a real backend's. */
class LockFaultsTest {

    private final InMemoryLockProvider provider = new InMemoryLockProvider(Duration.ofMillis(200));

    @AfterEach
    void close() {
        provider.close();
    }

    private CompletableFuture<LockHandle> acquire(String key, Duration wait, LockType type) {
        return provider.acquire(new LockRequest(key, wait.toNanos(), 0, false, type, LockOwner.next()));
    }

    private LockHandle hold(String key) {
        LockHandle handle = acquire(key, Duration.ZERO, LockType.REENTRANT).join();
        assertThat(handle).as("holds " + key).isNotNull();
        return handle;
    }

    @Test
    void aLostLeaseTellsEveryHolderOfTheKeyAndLetsTheNextWaiterIn() throws Exception {
        LockHandle reader = acquire("k", Duration.ZERO, LockType.READ).join();
        LockHandle otherReader = acquire("k", Duration.ZERO, LockType.READ).join();
        CompletableFuture<String> told = new CompletableFuture<>();
        reader.whenLost(told::complete);
        CompletableFuture<LockHandle> writer = acquire("k", Duration.ofSeconds(10), LockType.WRITE);
        LockHandle elsewhere = hold("other");

        assertThat(provider.onKey("k").loseLease()).isEqualTo(2);

        assertThat(told.get(5, TimeUnit.SECONDS)).isEqualTo("its lease was lost: the lock backend no longer has it "
                + "(simulated by InMemoryLockProvider.onKey(\"k\").loseLease())");
        assertThat(reader.lostWhileHeld()).isTrue();
        assertThat(otherReader.stillHeld()).isFalse();
        assertThat(reader.release()).as("no longer its own").isFalse();
        assertThat(writer.get(5, TimeUnit.SECONDS)).as("the waiter, once the lease was lost").isNotNull();
        assertThat(elsewhere.stillHeld()).as("another key").isTrue();

        LockHandle permit = provider.acquire(new LockRequest("p", 0, 0, false, LockType.REENTRANT, LockOwner.next(), 3))
                .join();
        assertThat(provider.onEveryKey().loseLease()).as("the writer, the other key and the semaphore").isEqualTo(3);
        assertThat(permit.stillHeld()).isFalse();
        assertThat(provider.lockedKeys()).isEmpty();
    }

    @Test
    void losingALeaseWhenNothingIsHeldSaysWhatIsHeld() {
        hold("lock:order:7");
        assertThatThrownBy(() -> provider.onKey("order:7").loseLease()).isInstanceOf(IllegalStateException.class)
                .hasMessage("onKey(\"order:7\").loseLease(): no lock of 'order:7' is held now, so there is no lease to "
                        + "lose; held: [lock:order:7] (keys include distlock.key-prefix)");
        provider.onKey("lock:order:7").loseLease();
        assertThatThrownBy(() -> provider.onEveryKey().loseLease()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("onEveryKey().loseLease(): no lock is held now");
    }

    @Test
    void failedAcquisitionsHitExactlyTheNextOnesOfTheKeyThenOfEveryKey() {
        provider.onKey("a").failNextAcquisitions(1);
        provider.onEveryKey().failNextAcquisitions(1);

        assertThat(acquire("a", Duration.ZERO, LockType.REENTRANT)).as("a's own fault first")
                .failsWithin(Duration.ZERO).withThrowableOfType(java.util.concurrent.ExecutionException.class)
                .havingCause().isInstanceOf(SimulatedBackendFailure.class).withMessage("Simulated lock backend failure: "
                        + "the acquisition of 'a' failed as told by InMemoryLockProvider.onKey(\"a\")"
                        + ".failNextAcquisitions (0 more to fail)");
        assertThat(acquire("b", Duration.ZERO, LockType.REENTRANT)).failsWithin(Duration.ZERO)
                .withThrowableOfType(java.util.concurrent.ExecutionException.class).havingCause()
                .withMessageContaining("onEveryKey().failNextAcquisitions");
        assertThat(provider.lockedKeys()).as("a failed acquisition takes nothing").isEmpty();
        assertThat(hold("a").release()).isTrue();
        assertThat(hold("b").release()).isTrue();
    }

    @Test
    void aFailedReleaseLeavesTheLockHeldUntilItExpiresByItself() {
        provider.onKey("k").failNextReleases(1);
        LockHandle watchdogLock = hold("k");

        assertThatThrownBy(watchdogLock::release).isInstanceOf(SimulatedBackendFailure.class)
                .hasMessageContaining("the release of 'k' failed");
        assertThat(provider.isLocked("k")).as("the backend never heard of the release").isTrue();
        await().atMost(Duration.ofSeconds(5)).until(() -> !provider.isLocked("k"));
        assertThat(watchdogLock.release()).as("expired: no longer its own").isFalse();
    }

    @Test
    void anAcquisitionDelayedPastItsWaitIsNotAcquiredAndNeverTakesTheLock() {
        provider.onEveryKey().delayAcquisitions(Duration.ofMillis(150));
        long start = System.nanoTime();

        assertThat(acquire("k", Duration.ofMillis(50), LockType.REENTRANT).join()).isNull();

        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("answered when its wait ended")
                .isGreaterThanOrEqualTo(Duration.ofMillis(50));
        await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(5)).until(() -> !provider.isLocked("k"));
    }

    @Test
    void aDelayedSingleTryIsAnsweredAfterTheDelayAndACancelledOneNeverHolds() {
        provider.onKey("k").delayAcquisitions(Duration.ofMillis(50));
        long start = System.nanoTime();
        LockHandle slow = acquire("k", Duration.ZERO, LockType.REENTRANT).join();
        assertThat(slow).isNotNull();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(50));
        assertThat(slow.release()).isTrue();

        acquire("k", Duration.ofSeconds(10), LockType.REENTRANT).cancel(false);
        await().during(Duration.ofMillis(150)).atMost(Duration.ofSeconds(5)).until(() -> !provider.isLocked("k"));

        CompletableFuture<LockHandle> pending = acquire("k", Duration.ofSeconds(10), LockType.REENTRANT);
        provider.close();
        assertThat(pending).failsWithin(Duration.ZERO).withThrowableOfType(java.util.concurrent.ExecutionException.class)
                .havingCause().withMessageContaining("closed while an acquisition was delayed");
    }

    @Test
    void resetRemovesTheFaultsOfOneKeyOrAll() {
        provider.onKey("a").failNextAcquisitions(1).delayAcquisitions(Duration.ofSeconds(30));
        provider.onKey("b").failNextAcquisitions(1);
        provider.onEveryKey().failNextReleases(1);

        provider.onKey("a").reset();
        LockHandle a = hold("a");
        provider.resetFaults();

        assertThat(hold("b").release()).isTrue();
        assertThat(a.release()).isTrue();
    }

    @Test
    void badInputIsRefusedNamingTheMethod() {
        assertThatThrownBy(() -> provider.onKey(" ")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("InMemoryLockProvider.onKey(key): the key must be a full lock key, prefix included (such as "
                        + "lock:order:7), was ' '");
        assertThatThrownBy(() -> provider.onKey("k").failNextAcquisitions(-1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("onKey(\"k\").failNextAcquisitions(times): times must be zero or more, was -1");
        assertThatThrownBy(() -> provider.onEveryKey().failNextReleases(-2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("onEveryKey().failNextReleases(times): times must be zero or more, was -2");
        assertThatThrownBy(() -> provider.onEveryKey().delayAcquisitions(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("onEveryKey().delayAcquisitions(delay): the delay must be zero or positive, was PT-0.001S");
        assertThatThrownBy(() -> new LockRecorder(null)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("LockRecorder(provider)");
        assertThat(acquire("k", Duration.ZERO, LockType.REENTRANT).join()).as("no fault was set by the refused calls")
                .isNotNull();
    }
}

package io.github.distlock.test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LockOptions;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What {@link InMemoryLockProvider} offers tests beyond the SPI: looking at held keys and interfering. */
class InMemoryLockProviderTest {

    private final InMemoryLockProvider provider = new InMemoryLockProvider(Duration.ofSeconds(1));

    @AfterEach
    void close() {
        provider.close();
    }

    private LockHandle acquire(String key, long waitMillis) {
        return provider.acquire(new LockRequest(key, TimeUnit.MILLISECONDS.toNanos(waitMillis), 0, false, LockOwner.next()))
                .join();
    }

    /** permits = 3: three holders, a fourth waits until one releases; the lock of the same key is apart. */
    @Test
    void permitsAdmitThatManyHoldersApartFromTheLock() throws Exception {
        List<LockHandle> holders = new java.util.ArrayList<>();
        for (int i = 0; i < 3; i++) {
            holders.add(provider.acquire(permit(Duration.ZERO)).join());
            assertThat(holders.get(i)).as("permit " + i).isNotNull();
        }
        assertThat(provider.acquire(permit(Duration.ZERO)).join()).as("a fourth at once").isNull();
        CompletableFuture<LockHandle> fourth = provider.acquire(permit(Duration.ofSeconds(10)));
        LockHandle lock = provider.acquire(new LockRequest("k", 0, 0, false, LockOwner.next())).join();
        assertThat(lock).as("the lock of the same key, while its permits are taken").isNotNull();
        assertThat(fourth).isNotDone();
        assertThat(holders.get(0).release()).isTrue();
        assertThat(fourth.get(5, TimeUnit.SECONDS)).as("the fourth, after a release").isNotNull();
        assertThatThrownBy(() -> provider.acquire(new LockRequest("k", 0, 0, true, LockType.REENTRANT, LockOwner.next(),
                3))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("permits = 3 cannot be combined");
        assertThat(lock.release()).isTrue();
    }

    private static LockRequest permit(Duration wait) {
        return new LockRequest("k", wait.toNanos(), 0, false, LockType.REENTRANT, LockOwner.next(), 3);
    }

    @Test
    void aUsersTestSeesItsCodeRunUnderTheLockAndNothingHeldAfterwards() {
        // what a user's test does: the template on the in-memory provider, no Redis
        DefaultLockTemplate locks = new DefaultLockTemplate(provider, "app:", Duration.ZERO, null, List.of());
        boolean lockedWhileRunning = locks.execute("order:1", LockOptions.DEFAULTS, () -> provider.isLocked("app:order:1"));
        assertThat(lockedWhileRunning).isTrue();
        assertThat(provider.lockedKeys()).isEmpty();
    }

    @Test
    void lockedKeysListsWhatIsHeldRightNow() {
        LockHandle b = acquire("b", 0);
        LockHandle a = acquire("a", 0);
        assertThat(provider.lockedKeys()).containsExactly("a", "b");
        assertThat(a.release()).isTrue();
        assertThat(provider.lockedKeys()).containsExactly("b");
        assertThat(provider.isLocked("a")).isFalse();
        assertThat(b.release()).isTrue();
        assertThat(provider.lockedKeys()).isEmpty();
    }

    @Test
    void expireTakesTheLockAwayAndTellsTheHolder() throws Exception {
        assertThat(provider.expire("k")).as("nothing held").isFalse();
        LockHandle holder = acquire("k", 0);
        CompletableFuture<String> lost = new CompletableFuture<>();
        holder.whenLost(lost::complete);
        CompletableFuture<LockHandle> waiter = provider.acquire(new LockRequest("k", TimeUnit.SECONDS.toNanos(10), 0,
                false, LockOwner.next()));
        assertThat(provider.expire("k")).isTrue();
        assertThat(lost.get(5, TimeUnit.SECONDS)).contains("taken away");
        assertThat(waiter.get(5, TimeUnit.SECONDS)).as("the waiter, once the lock was taken away").isNotNull();
        assertThat(holder.release()).isFalse();
        assertThat(provider.isLocked("k")).as("the waiter's lock, after the stale release").isTrue();
    }

    @Test
    void abandonAcceptsOnlyItsOwnHandles() {
        try (InMemoryLockProvider other = new InMemoryLockProvider()) {
            LockHandle foreign = other.acquire(new LockRequest("k", 0, 0, false, LockOwner.next())).join();
            assertThatThrownBy(() -> provider.abandon(foreign)).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void waitingCountsQueuedAcquisitionsAndCloseFailsThem() {
        acquire("k", 0);
        CompletableFuture<LockHandle> waiter = provider.acquire(new LockRequest("k", TimeUnit.SECONDS.toNanos(30), 0,
                false, LockType.FAIR, LockOwner.next()));
        assertThat(provider.waiting("k")).isEqualTo(1);
        provider.close();
        assertThat(waiter).isCompletedExceptionally();
        assertThat(provider.acquire(new LockRequest("other", 0, 0, false, LockOwner.next())))
                .as("an acquisition after close").isCompletedExceptionally();
    }
}

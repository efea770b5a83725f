package io.github.distlock;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A blocking call interrupted while it waits stops the backend's wait; when the backend grants the lock in that very
 * moment (its future completes before the cancel can), the lock is given back at once, not left held and renewed for a
 * caller that is gone, and the call leaves the calls in progress.
 */
class AnInterruptedWaiterGivesBackALockGrantedAsItStopsWaitingTest {

    @Test
    void aLockGrantedAsTheInterruptedWaiterCancelsIsReleasedAndTheCallEnds() throws Exception {
        RaceLosingProvider provider = new RaceLosingProvider();
        DefaultLockTemplate template = new DefaultLockTemplate(provider, "lock:", Duration.ofSeconds(30), null,
                List.of());
        AtomicBoolean ran = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicBoolean interruptKept = new AtomicBoolean();
        Thread waiter = new Thread(() -> {
            try {
                template.execute("k", LockOptions.waitFor(Duration.ofSeconds(30)), () -> ran.getAndSet(true));
            }
            catch (Throwable ex) {
                failure.set(ex);
                interruptKept.set(Thread.currentThread().isInterrupted());
            }
        }, "interrupted-waiter");
        waiter.start();
        assertThat(provider.asked.await(5, TimeUnit.SECONDS)).as("the backend was asked for the lock").isTrue();
        assertThat(template.waitingCallCount()).isEqualTo(1);

        waiter.interrupt();
        waiter.join(5_000);

        assertThat(waiter.isAlive()).as("the interrupted waiter still waits").isFalse();
        assertThat(failure.get()).isInstanceOf(LockAcquisitionException.class)
                .hasCauseInstanceOf(InterruptedException.class);
        assertThat(interruptKept).as("the interrupt flag, kept for the caller").isTrue();
        assertThat(ran).as("the guarded code ran").isFalse();
        assertThat(provider.released).as("releases of the lock granted as the waiter stopped").hasValue(1);
        assertThat(template.activeLocks()).as("calls in progress").isEmpty();
        assertThat(template.waitingCallCount()).isZero();
        assertThat(template.heldLockCount()).isZero();
    }

    @Test
    void aLockGrantedAfterTheBackendRefusedTheCancelIsReleasedWhenItComes() throws Exception {
        CancelRefusingProvider provider = new CancelRefusingProvider();
        DefaultLockTemplate template = new DefaultLockTemplate(provider, "lock:", Duration.ofSeconds(30), null,
                List.of());
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread waiter = new Thread(() -> {
            try {
                template.execute("k", LockOptions.waitFor(Duration.ofSeconds(30)), () -> true);
            }
            catch (Throwable ex) {
                failure.set(ex);
            }
        }, "interrupted-waiter");
        waiter.start();
        assertThat(provider.asked.await(5, TimeUnit.SECONDS)).as("the backend was asked for the lock").isTrue();
        waiter.interrupt();
        waiter.join(5_000);
        assertThat(failure.get()).isInstanceOf(LockAcquisitionException.class);
        assertThat(provider.released).as("nothing granted yet").hasValue(0);

        // the backend grants after the caller is gone
        provider.grant.complete(provider.handle);

        assertThat(provider.released).as("releases of the lock granted to a caller that is gone").hasValue(1);
        assertThat(template.activeLocks()).as("calls in progress").isEmpty();
        assertThat(template.heldLockCount()).isZero();
    }

    /** A backend whose wait cannot be cancelled (an adapter's future): it may still grant after the caller left. */
    private static final class CancelRefusingProvider implements LockProvider {

        final CountDownLatch asked = new CountDownLatch(1);
        final AtomicInteger released = new AtomicInteger();
        final CompletableFuture<LockHandle> grant = new CompletableFuture<>() {
            @Override
            public boolean cancel(boolean mayInterruptIfRunning) {
                return false;
            }
        };

        final LockHandle handle = new CountingHandle(released);

        @Override
        public CompletableFuture<LockHandle> acquire(LockRequest request) {
            asked.countDown();
            return grant;
        }
    }

    /** Grants the lock only when its wait is cancelled, so the cancel always comes too late. */
    private static final class RaceLosingProvider implements LockProvider {

        final CountDownLatch asked = new CountDownLatch(1);
        final AtomicInteger released = new AtomicInteger();

        private final LockHandle handle = new CountingHandle(released);

        @Override
        public CompletableFuture<LockHandle> acquire(LockRequest request) {
            CompletableFuture<LockHandle> grant = new CompletableFuture<>() {
                @Override
                public boolean cancel(boolean mayInterruptIfRunning) {
                    // the grant's reply arrives just before the cancel
                    complete(handle);
                    return super.cancel(mayInterruptIfRunning);
                }
            };
            asked.countDown();
            return grant;
        }
    }

    /** A held lock whose releases are counted. */
    private record CountingHandle(AtomicInteger released) implements LockHandle {

        @Override
        public long fencingToken() {
            return -1;
        }

        @Override
        public CompletableFuture<Boolean> releaseAsync() {
            released.incrementAndGet();
            return CompletableFuture.completedFuture(Boolean.TRUE);
        }
    }
}

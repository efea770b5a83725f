package io.github.distlock.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.HeldLock;
import io.github.distlock.LockContext;
import io.github.distlock.LockOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link LockContext}'s invariant: the frames of a thread are the locks of the calls it runs, so nothing of one call
 * is seen by code of another ("a thread that holds nothing has no frame"). A waiter's {@code acquireAsync} is granted
 * by another caller's release: its continuation must not run inside the releasing caller's locks (re-entering them,
 * reading their fencing tokens). On the in-memory provider the test kit offers as having Redis's semantics.
 */
class AsyncGrantsRunOutsideTheReleasersLocksTest {

    private final InMemoryLockProvider provider = new InMemoryLockProvider(Duration.ofSeconds(30));

    private final DefaultLockTemplate locks = new DefaultLockTemplate(provider, "lock:", Duration.ZERO, null, List.of());

    @AfterEach
    void close() {
        locks.shutdown();
        provider.close();
    }

    @Test
    void aWaiterGrantedByAReleaseDoesNotReEnterTheReleasersOtherLocks() throws Exception {
        AtomicReference<List<String>> seenByWaiter = new AtomicReference<>();
        AtomicReference<Object> nestedOuterCall = new AtomicReference<>();
        CompletableFuture<HeldLock>[] waiter = new CompletableFuture[1];
        CompletableFuture<Void> done = new CompletableFuture<>();
        locks.execute("outer", LockOptions.waitFor(Duration.ZERO), () -> {
            locks.execute("inner", LockOptions.waitFor(Duration.ZERO), () -> {
                // another owner queues for "inner"; it gets it when this call releases it
                waiter[0] = locks.acquireAsync(List.of("inner"), LockOptions.waitFor(Duration.ofSeconds(10)));
                waiter[0].thenAccept(held -> {
                    seenByWaiter.set(new ArrayList<>(LockContext.heldKeys()));
                    try {
                        // "outer" is held by the other call: a new owner must not get into it
                        nestedOuterCall.set(locks.tryExecute("outer", LockOptions.waitFor(Duration.ZERO), () -> "ran inside")
                                .acquired());
                    }
                    catch (RuntimeException ex) {
                        nestedOuterCall.set(ex);
                    }
                    held.releaseAsync().whenComplete((ignored, failure) -> done.complete(null));
                });
                return null;
            });
            return null;
        });
        done.get(10, TimeUnit.SECONDS);
        assertThat(nestedOuterCall.get()).as("a call of the waiter on 'outer', held by another call at that moment")
                .isEqualTo(Boolean.FALSE);
        assertThat(seenByWaiter.get()).as("the locks the waiter's continuation believes its thread holds")
                .doesNotContain("lock:outer");
    }
}

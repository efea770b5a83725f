package io.github.distlock.types;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import io.github.distlock.NestedLockException;
import io.github.distlock.it.LockTestApplication;
import io.github.distlock.it.RedisIntegrationTest;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A call nested in a hold of its key on the same thread that can't re-enter it would wait for its own thread: such
 * calls fail at once with {@link NestedLockException} ("taking the lock anew would wait for the outer call;
 * so the nested call is refused at once"), and the README's failure table tells callers which exception that is. On a
 * real redis-server.
 */
@SpringBootTest(classes = LockTestApplication.class)
class NestedCallsOnAHeldKeyFailAtOnceTest extends RedisIntegrationTest {

    @Autowired
    LockTemplate locks;

    /**
     * {@code executeAsync} takes the key on the calling thread (blocking, for a new owner): nested in a hold of its key
     * it waits for the thread that is blocked in it, for its whole wait (for ever with a wait of FOR_EVER), and then
     * reports "another caller held the lock" - there was none.
     */
    @Test
    void anAsyncCallNestedInAHoldOfItsKeyFailsAtOnceInsteadOfWaitingForItsOwnThread() {
        Duration wait = Duration.ofSeconds(3);
        long[] tookMillis = new long[1];
        Throwable failure = locks.execute("self-wait", LockOptions.waitFor(Duration.ZERO), () -> {
            long start = System.nanoTime();
            CompletableFuture<String> nested = locks.executeAsync(List.of("self-wait"), LockOptions.waitFor(wait),
                    () -> CompletableFuture.completedFuture("ran"));
            Throwable seen = null;
            try {
                nested.get(wait.toMillis() + 5_000, TimeUnit.MILLISECONDS);
            }
            catch (java.util.concurrent.ExecutionException ex) {
                seen = ex.getCause();
            }
            catch (Exception ex) {
                seen = ex;
            }
            tookMillis[0] = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            return seen;
        });
        assertThat(failure).as("the nested async call on a key its own thread holds (it took %d ms)", tookMillis[0])
                .isInstanceOf(NestedLockException.class);
        assertThat(tookMillis[0]).as("refused at once, not after waiting for its own thread").isLessThan(1_000);
    }

    /** README, Failures: "IllegalStateException | a nested exclusive call on a key this thread holds for READ". */
    @Test
    void aNestedExclusiveCallInAReadHoldThrowsTheExceptionTheFailureTableNames() {
        Throwable failure = locks.execute("read-then-write", LockOptions.waitFor(Duration.ZERO).withType(LockType.READ),
                () -> {
                    try {
                        locks.execute("read-then-write", LockOptions.waitFor(Duration.ZERO).withType(LockType.WRITE),
                                () -> "ran");
                        return null;
                    }
                    catch (RuntimeException ex) {
                        return ex;
                    }
                });
        assertThat(failure).as("what a caller following the README's failure table catches")
                .isInstanceOf(IllegalStateException.class);
    }
}

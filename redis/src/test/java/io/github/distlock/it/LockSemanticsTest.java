package io.github.distlock.it;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockContext;
import io.github.distlock.LockEvent;
import io.github.distlock.LockListener;
import io.github.distlock.LockOptions;
import io.github.distlock.LockResult;
import io.github.distlock.LockTemplate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.core.annotation.Order;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Keys, release in every outcome, wait semantics, reentrancy and the template's own API, against a real redis-server.
 */
@SpringBootTest(classes = {LockTestApplication.class, LockSemanticsTest.Config.class})
class LockSemanticsTest extends RedisIntegrationTest {

    @Autowired
    Service service;

    @Autowired
    Outer outer;

    @Autowired
    LockTemplate lockTemplate;

    @Autowired
    RecordingLockListener listener;

    /** Holds a lock in another thread until released. */
    HeldElsewhere holder;

    @AfterEach
    void releaseHolder() throws Exception {
        if (holder != null) {
            holder.close();
        }
        listener.events.clear();
    }

    @Test
    void redisKeyIsPrefixPlusEvaluatedKeyWhileHeldAndGoneAfter() {
        String typeWhileHeld = service.inspect("42", () -> redisCommands.type("lock:item:42"));

        assertThat(typeWhileHeld).isEqualTo("hash");
        assertThat(redisCommands.exists("lock:item:42")).isZero();
        assertThat(listener.events).containsExactly("acquired:lock:item:42", "released:lock:item:42");
    }

    @Test
    void differentKeysDoNotBlockEachOther() throws Exception {
        holder = HeldElsewhere.hold(lockTemplate, "item:1");

        // waitTime = 0: would fail at once if key 2 were blocked by key 1
        assertThat(service.inspect("2", () -> redisCommands.exists("lock:item:1", "lock:item:2"))).isEqualTo(2L);
        assertThat(redisCommands.exists("lock:item:1")).isOne();
    }

    @Test
    void releasedAfterNormalReturn() {
        // held while the method ran, gone after: "never locked" would fail the first assertion
        assertThat(service.inspect("r", () -> redisCommands.exists("lock:item:r"))).isOne();
        assertThat(redisCommands.exists("lock:item:r")).isZero();
    }

    @Test
    void releasedAfterCheckedExceptionWhichReachesTheCallerUnchanged() {
        IOException thrown = new IOException("disk full");

        assertThatThrownBy(() -> service.fail("c", thrown)).isSameAs(thrown);
        assertThat(redisCommands.exists("lock:item:c")).isZero();
        assertThat(listener.events).containsExactly("acquired:lock:item:c", "released:lock:item:c");
    }

    @Test
    void releasedAfterUncheckedExceptionAndError() {
        IllegalStateException unchecked = new IllegalStateException("boom");
        AssertionError error = new AssertionError("fatal");

        assertThatThrownBy(() -> service.fail("u", unchecked)).isSameAs(unchecked);
        assertThatThrownBy(() -> service.fail("u", error)).isSameAs(error);
        assertThat(redisCommands.exists("lock:item:u")).isZero();
        // a lock that was released can be taken at once
        assertThat(service.inspect("u", () -> "again")).isEqualTo("again");
    }

    @Test
    void releasedEvenWhenTheMethodLeavesItsThreadInterrupted() {
        try {
            assertThat(service.inspect("i", () -> {
                Thread.currentThread().interrupt();
                return "interrupted";
            })).isEqualTo("interrupted");

            assertThat(Thread.currentThread().isInterrupted()).as("the caller's interrupt status is kept").isTrue();
        }
        finally {
            Thread.interrupted();
        }
        assertThat(redisCommands.exists("lock:item:i")).isZero();
        assertThat(listener.events).containsExactly("acquired:lock:item:i", "released:lock:item:i");
    }

    @Test
    void zeroWaitFailsAtOnceWhileAnotherThreadHoldsTheKey() throws Exception {
        holder = HeldElsewhere.hold(lockTemplate, "item:busy");
        int callsBefore = service.calls();
        long start = System.nanoTime();

        assertThatThrownBy(() -> service.inspect("busy", () -> "never"))
                .isInstanceOf(LockAcquisitionException.class)
                .hasMessage("Could not acquire lock 'lock:item:busy' in a single try (wait time 0): it is held by another caller")
                .satisfies(ex -> assertThat(((LockAcquisitionException) ex).getKey()).isEqualTo("lock:item:busy"));

        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("no waiting: one try").isLessThan(Duration.ofMillis(1000));
        assertThat(service.calls()).as("the method never ran").isEqualTo(callsBefore);
        assertThat(listener.events).contains("notAcquired:lock:item:busy");
    }

    @Test
    void positiveWaitSucceedsWhenTheHolderReleasesWithinIt() throws Exception {
        holder = HeldElsewhere.hold(lockTemplate, "item:wait");
        CompletableFuture<String> waiter = CompletableFuture.supplyAsync(() -> service.waitUpTo2s("wait"));
        // the waiter is blocked: it has not run and the lock is still the holder's
        await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(1)).until(() -> !waiter.isDone());

        holder.release();

        assertThat(waiter.get(5, TimeUnit.SECONDS)).isEqualTo("got it");
    }

    @Test
    void positiveWaitFailsAfterAboutThatLongWhenTheHolderKeepsTheLock() throws Exception {
        holder = HeldElsewhere.hold(lockTemplate, "item:wait");
        long start = System.nanoTime();

        assertThatThrownBy(() -> service.waitUpTo2s("wait"))
                .isInstanceOf(LockAcquisitionException.class)
                .hasMessageContaining("'lock:item:wait' within the wait time of 2000 ms");

        Duration waited = Duration.ofNanos(System.nanoTime() - start);
        assertThat(waited).isBetween(Duration.ofMillis(1900), Duration.ofMillis(4000));
    }

    @Test
    void nestedCallOnTheSameKeyInTheSameThreadReenters() {
        String innerHoldCount = outer.callInner("same");

        // re-entered in the caller, not in Redis: the outer call's single hold, lease and owner stay as they were
        assertThat(innerHoldCount).as("hold count of the lock's owner field inside the inner call").isEqualTo("1");
        assertThat(redisCommands.exists("lock:nested:same")).isZero();
    }

    @Test
    void sameKeyFromAnotherThreadIsBlockedEvenWhileReentered() throws Exception {
        holder = HeldElsewhere.hold(lockTemplate, "nested:other");

        assertThatThrownBy(() -> outer.callInner("other")).isInstanceOf(LockAcquisitionException.class);
    }

    @Test
    void templateTryExecuteReportsNotAcquiredWithoutRunning() throws Exception {
        holder = HeldElsewhere.hold(lockTemplate, "job");
        LockResult<String> result = lockTemplate.tryExecute("job", LockOptions.DEFAULTS, () -> "ran");

        assertThat(result.acquired()).isFalse();
        assertThat(result.orElse("skipped")).isEqualTo("skipped");
        holder.release();

        assertThat(lockTemplate.tryExecute("job", LockOptions.DEFAULTS, () -> "ran")).isEqualTo(LockResult.of("ran"));
        assertThat(lockTemplate.tryRun("job", LockOptions.DEFAULTS, () -> { })).isTrue();
    }

    @Test
    void fencingTokensRiseAcrossAcquisitionsAndAcrossALostCounter() {
        LockOptions fenced = LockOptions.DEFAULTS.withFencing();
        long first = lockTemplate.execute("fenced", fenced, () -> LockContext.fencingToken().orElseThrow());
        long second = lockTemplate.execute("fenced", fenced, () -> LockContext.fencingToken().orElseThrow());
        String counter = "redisson_lock_token:{lock:fenced}";
        assertThat(redisCommands.pttl(counter)).as("the counter expires when unused").isPositive();

        // what a restart without persistence does to the counter
        redisCommands.del(counter);
        long afterLoss = lockTemplate.execute("fenced", fenced, () -> LockContext.fencingToken().orElseThrow());

        assertThat(second).isGreaterThan(first);
        assertThat(afterLoss).isGreaterThan(second);
        assertThat(LockContext.fencingToken()).as("no token outside the lock").isEmpty();
    }

    @Test
    void templateRejectsBlankKeysBeforeLocking() {
        assertThatThrownBy(() -> lockTemplate.execute(" ", () -> "x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must not be null or blank");
        assertThat(redisCommands.keys("*")).isEmpty();
    }

    @Test
    void aFailingListenerNeverBlocksTheRelease() {
        assertThat(lockTemplate.execute("noisy", () -> "ok")).isEqualTo("ok");

        assertThat(redisCommands.exists("lock:noisy")).isZero();
        assertThat(listener.events).containsExactly("acquired:lock:noisy", "released:lock:noisy");
    }

    static class Service {

        private final java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();

        /** Read through the proxy: a field read on the CGLIB proxy would see the proxy's own, never-set field. */
        public int calls() {
            return calls.get();
        }

        @DistributedLock(key = "'item:' + #id", waitTime = 0)
        public <T> T inspect(String id, java.util.function.Supplier<T> whileHeld) {
            calls.incrementAndGet();
            return whileHeld.get();
        }

        @DistributedLock(key = "'item:' + #id", waitTime = 2, timeUnit = TimeUnit.SECONDS)
        public String waitUpTo2s(String id) {
            return "got it";
        }

        @DistributedLock(key = "'item:' + #id")
        public void fail(String id, Throwable failure) throws Throwable {
            throw failure;
        }
    }

    static class Outer {

        private final Inner inner;

        Outer(Inner inner) {
            this.inner = inner;
        }

        @DistributedLock(key = "'nested:' + #id")
        public String callInner(String id) {
            return inner.holdCount(id);
        }
    }

    static class Inner {

        @DistributedLock(key = "'nested:' + #id", waitTime = 0)
        public String holdCount(String id) {
            return redisCommands.hvals("lock:nested:" + id).get(0);
        }
    }

    @TestConfiguration
    static class Config {

        @Bean
        Service service() {
            return new Service();
        }

        @Bean
        Inner inner() {
            return new Inner();
        }

        @Bean
        Outer outer(Inner inner) {
            return new Outer(inner);
        }

        @Bean
        @Order(1)
        LockListener failingListener() {
            return new LockListener() {
                @Override
                public void onAcquired(LockEvent event) {
                    throw new IllegalStateException("listener bug");
                }

                @Override
                public void onReleased(LockEvent event) {
                    throw new IllegalStateException("listener bug");
                }
            };
        }

        @Bean
        @Order(2)
        RecordingLockListener recordingLockListener() {
            return new RecordingLockListener();
        }
    }
}

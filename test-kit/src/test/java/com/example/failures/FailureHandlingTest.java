package com.example.failures;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongConsumer;

import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockBackendException;
import io.github.distlock.LockEvent;
import io.github.distlock.LockListener;
import io.github.distlock.LockType;
import io.github.distlock.test.AutoConfigureInMemoryLocks;
import io.github.distlock.test.InMemoryLockProvider;
import io.github.distlock.test.LockAssert;
import io.github.distlock.test.LockRecorder;
import io.github.distlock.test.SimulatedBackendFailure;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * A user's test of its own failure handling, on in-memory locks told to fail: a lease lost while the method runs, a
 * backend that can't be reached, a backend slower than the wait, a release that fails; and what the code ran under.
 */
@SpringBootTest(classes = {FailuresApplication.class, FailureHandlingTest.Doubles.class})
@AutoConfigureInMemoryLocks
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class FailureHandlingTest {

    @Autowired
    OrderService orders;

    @Autowired
    InMemoryLockProvider locks;

    @Autowired
    TestWarehouse warehouse;

    @Autowired
    EventLog events;

    @BeforeEach
    void startCounting() {
        orders.resetCounts();
        events.clear();
    }

    @AfterEach
    void noLockLeftBehind() {
        warehouse.whileShipping = null;
        LockAssert.assertNoLocksHeld(locks);
    }

    @Test
    void aLeaseLostWhileTheMethodRunsIsReportedToListenersAndToTheRunningCode() throws Exception {
        CountDownLatch shipping = new CountDownLatch(1);
        CountDownLatch leaseLost = new CountDownLatch(1);
        AtomicReference<Throwable> nestedCall = new AtomicReference<>();
        LockRecorder shipped = new LockRecorder(locks);
        warehouse.whileShipping = orderId -> {
            shipping.countDown();
            awaitLatch(leaseLost);
            shipped.record();
            try {
                orders.cancelOrder(orderId);
            }
            catch (Throwable refused) {
                nestedCall.set(refused);
            }
        };
        CompletableFuture<String> running = CompletableFuture.supplyAsync(() -> orders.placeOrder(7));
        awaitLatch(shipping);

        assertThat(locks.onKey("lock:order:7").loseLease()).isEqualTo(1);

        await().atMost(Duration.ofSeconds(5)).until(() -> events.contains("leaseLost lock:order:7"));
        assertThat(orders.submitOrder(7)).as("another caller gets the lock while the first still runs")
                .isEqualTo("submitted 7");
        leaseLost.countDown();
        assertThat(running.get(5, TimeUnit.SECONDS)).as("a lost lease never fails the finished call")
                .isEqualTo("placed 7");
        assertThat(nestedCall.get()).as("the handle knows: a nested call on the lost lock is refused")
                .isInstanceOf(LockAcquisitionException.class).hasMessageContaining("lock:order:7")
                .hasMessageContaining("in a single try");
        assertThat(nestedCall.get().getCause()).hasMessageContaining("was lost");
        assertThatThrownBy(() -> shipped.assertRanUnder("lock:order:7")).isInstanceOf(AssertionError.class)
                .hasMessageContaining("lock:order:7 (lost: the provider no longer held it)")
                .hasMessageContaining("its lease was lost");
        assertThat(events.named("leaseLost lock:order:7")).as("reported once, not again at release").hasSize(1);
    }

    @Test
    void anUnreachableBackendFailsEveryCallShapeWithLockBackendExceptionNeverSkipsNorFallsBack() {
        locks.onEveryKey().failNextAcquisitions(3);

        assertThatThrownBy(() -> orders.placeOrder(1)).isInstanceOf(LockBackendException.class)
                .hasMessageContaining("lock:order:1").hasCauseInstanceOf(SimulatedBackendFailure.class)
                .hasMessageContaining("failNextAcquisitions (2 more to fail)");
        assertThatThrownBy(() -> orders.dailyReport("monday")).as("skipIfLocked skips contention only")
                .isInstanceOf(LockBackendException.class).hasMessageContaining("lock:report:monday");
        assertThatThrownBy(() -> orders.submitOrder(2)).as("the fallback is for contention only")
                .isInstanceOf(LockBackendException.class).hasMessageContaining("lock:order:2");
        assertThat(orders.bodiesRun()).as("no method body ran").isZero();
        assertThat(orders.fallbacksRun()).isZero();
        assertThat(events.named("notAcquired")).containsExactly("notAcquired lock:order:1 SimulatedBackendFailure",
                "notAcquired lock:report:monday SimulatedBackendFailure", "notAcquired lock:order:2 SimulatedBackendFailure");

        assertThat(orders.placeOrder(1)).as("the fourth call: the outage is over").isEqualTo("placed 1");
    }

    @Test
    void anAcquisitionSlowerThanTheWaitFailsWithLockAcquisitionException() {
        locks.onKey("lock:stock:1").delayAcquisitions(Duration.ofMillis(300));

        long start = System.nanoTime();
        assertThatThrownBy(() -> orders.reserve(1)).isInstanceOf(LockAcquisitionException.class)
                .hasMessageContaining("lock:stock:1").hasMessageContaining("within the wait time of 100 ms");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("answered when the wait ended")
                .isGreaterThanOrEqualTo(Duration.ofMillis(100));
        assertThat(orders.bodiesRun()).isZero();
        assertThat(orders.reserve(2)).as("another key is not slow").isEqualTo("reserved 2");

        locks.onKey("lock:stock:1").delayAcquisitions(Duration.ofMillis(30));
        start = System.nanoTime();
        assertThat(orders.reserve(1)).as("a delay within the wait").isEqualTo("reserved 1");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(30));
    }

    @Test
    void aFailedReleaseIsReportedAndTheLockExpiresByItself() {
        locks.onKey("lock:refund:5").failNextReleases(1);

        assertThat(orders.refund(5)).as("the call's own result stands").isEqualTo("refunded 5");

        assertThat(events.named("releaseFailed")).containsExactly("releaseFailed lock:refund:5 SimulatedBackendFailure");
        assertThat(locks.isLocked("lock:refund:5")).as("still held in the backend").isTrue();
        await().atMost(Duration.ofSeconds(5)).until(() -> !locks.isLocked("lock:refund:5"));
    }

    @Test
    void theRecorderTellsWhatTheCodeRanUnderAndSaysWhatWasHeldInstead() {
        LockRecorder shipped = new LockRecorder(locks);
        assertThatThrownBy(() -> shipped.assertRanUnder("lock:order:42")).isInstanceOf(AssertionError.class)
                .hasMessage("Expected the recorded code to run under the lock 'lock:order:42', but it never ran: "
                        + "record() was not called");
        warehouse.whileShipping = orderId -> shipped.record();

        orders.placeOrder(42);

        shipped.assertRanUnder("lock:order:42").withType(LockType.REENTRANT).unfenced();
        assertThatThrownBy(() -> shipped.assertRanUnder("order:42")).isInstanceOf(AssertionError.class)
                .hasMessageContaining("Expected the recorded code to run under the lock 'order:42', but in run 1 of 1")
                .hasMessageContaining("held [lock:order:42 (REENTRANT, unfenced)]");
        assertThatThrownBy(() -> shipped.assertRanUnder("lock:order:42").withType(LockType.FAIR))
                .isInstanceOf(AssertionError.class).hasMessageContaining("'lock:order:42' of type FAIR, but in run 1 "
                        + "of 1 it held lock:order:42 (REENTRANT, unfenced)");
        assertThatThrownBy(() -> shipped.assertRanUnder("lock:order:42").fenced())
                .isInstanceOf(AssertionError.class).hasMessageContaining("'lock:order:42' fenced, but");
        assertThatThrownBy(shipped::assertRanWithoutLock).isInstanceOf(AssertionError.class)
                .hasMessageContaining("to run without a lock, but in run 1 of 1");

        shipped.clear();
        orders.refund(43);
        shipped.assertRanUnder("lock:refund:43").withType(LockType.FAIR).fenced();
        assertThat(shipped.recordings()).singleElement().satisfies(run -> assertThat(run.held())
                .singleElement().satisfies(lock -> assertThat(lock.fencingToken()).isPositive()));
    }

    /** Runs before the next test, which would fail if this fault outlived its test. */
    @Test
    @Order(1)
    void aFaultLeftUnusedByATest() {
        locks.onEveryKey().failNextAcquisitions(1).delayAcquisitions(Duration.ofSeconds(10));
        locks.onKey("lock:order:9").failNextAcquisitions(5);
    }

    @Test
    @Order(2)
    void isGoneInTheNextTest() {
        assertThat(orders.placeOrder(9)).isEqualTo("placed 9");
        assertThat(orders.reserve(9)).isEqualTo("reserved 9");
    }

    private static void awaitLatch(CountDownLatch latch) {
        try {
            assertThat(latch.await(10, TimeUnit.SECONDS)).isTrue();
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new AssertionError(ex);
        }
    }

    /** The test doubles: the warehouse the service calls under its lock, and a listener logging lock events. */
    @TestConfiguration(proxyBeanMethods = false)
    static class Doubles {

        @Bean
        TestWarehouse warehouse() {
            return new TestWarehouse();
        }

        @Bean
        EventLog eventLog() {
            return new EventLog();
        }
    }

    static class TestWarehouse implements Warehouse {

        volatile LongConsumer whileShipping;

        @Override
        public void ship(long orderId) {
            LongConsumer hook = whileShipping;
            if (hook != null) {
                hook.accept(orderId);
            }
        }
    }

    /** Lock events as "kind key [failure]": what a user's metrics or alerts would see. */
    static class EventLog implements LockListener {

        private final List<String> events = new CopyOnWriteArrayList<>();

        @Override
        public void onNotAcquired(LockEvent event) {
            log("notAcquired", event);
        }

        @Override
        public void onLeaseLost(LockEvent event) {
            log("leaseLost", event);
        }

        @Override
        public void onReleaseFailed(LockEvent event) {
            log("releaseFailed", event);
        }

        private void log(String kind, LockEvent event) {
            events.add(kind + " " + event.key()
                    + ((event.failure() != null) ? " " + event.failure().getClass().getSimpleName() : ""));
        }

        boolean contains(String entry) {
            return events.contains(entry);
        }

        List<String> named(String prefix) {
            return events.stream().filter(entry -> entry.startsWith(prefix)).toList();
        }

        void clear() {
            events.clear();
        }
    }
}

package io.github.distlock.observation;

import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.DistributedLock;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import io.github.distlock.it.LockTestApplication;
import io.github.distlock.it.RedisIntegrationTest;
import io.micrometer.common.KeyValue;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * One {@code distlock.lock} observation per lock call, over wait and hold, with low-cardinality tags only (name, type,
 * outcome) and the key as a high-cardinality value, on a real redis-server; the gauges of held and waiting locks.
 */
@SpringBootTest(classes = {LockTestApplication.class, LockObservationTest.Config.class})
class LockObservationTest extends RedisIntegrationTest {

    @Autowired
    TestObservationRegistry observations;

    @Autowired
    LockTemplate locks;

    @Autowired
    Orders orders;

    @Autowired
    MeterRegistry meters;

    @Autowired
    Stopped stopped;

    @BeforeEach
    void clear() {
        observations.clear();
        stopped.contexts.clear();
    }

    /** Every call, whatever its outcome, leaves the template's list of calls in progress. */
    @AfterEach
    void nothingLeftActive() {
        await().atMost(Duration.ofSeconds(5)).until(() -> ((DefaultLockTemplate) locks).activeLocks().isEmpty());
    }

    @Test
    void anAnnotatedCallIsOneObservationNamedAfterItsMethodWithTheKeyOnlyAsAHighCardinalityValue() {
        AtomicReference<Observation> current = new AtomicReference<>();
        orders.place(7, () -> current.set(observations.getCurrentObservation()));

        TestObservationRegistryAssert.assertThat(observations)
                .hasNumberOfObservationsWithNameEqualTo("distlock.lock", 1)
                .hasObservationWithNameEqualTo("distlock.lock").that()
                .hasContextualNameEqualTo("lock Orders.place")
                .hasLowCardinalityKeyValue("name", "Orders.place")
                .hasLowCardinalityKeyValue("type", "reentrant")
                .hasLowCardinalityKeyValue("outcome", "released")
                .hasHighCardinalityKeyValue("key", "lock:order:7")
                .hasBeenStarted().hasBeenStopped();
        Observation.Context context = stopped.contexts.peek();
        assertThat(context.getLowCardinalityKeyValues().stream().map(KeyValue::getValue))
                .noneMatch(value -> value.contains("order:7"));
        // the guarded code ran inside the lock's observation: its own spans would be children of the lock's
        assertThat(current.get()).isNotNull();
        assertThat(current.get().getContext()).isSameAs(context);
        // Micrometer's timer of the observation carries the low-cardinality tags only
        Timer timer = meters.find("distlock.lock").tag("name", "Orders.place").tag("outcome", "released").timer();
        assertThat(timer).isNotNull();
        assertThat(timer.getId().getTags()).noneMatch(tag -> tag.getKey().equals("key") || tag.getValue().contains("order:7"));
    }

    @Test
    void aCallThatFindsTheLockTakenIsOneObservationNotAcquired() throws Exception {
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        CompletableFuture<Void> holder = CompletableFuture.runAsync(() -> orders.place(8, () -> {
            holding.countDown();
            awaitQuietly(finish);
        }));
        try {
            assertThat(holding.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(meters.get("distlock.locks.held").gauge().value()).isEqualTo(1.0);
            assertThatThrownBy(() -> orders.place(8, () -> { })).isInstanceOf(LockAcquisitionException.class);
        }
        finally {
            finish.countDown();
            holder.get(10, TimeUnit.SECONDS);
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> stopped.contexts.size() == 2);
        assertThat(outcomes()).containsExactlyInAnyOrder("released", "not_acquired");
        assertThat(meters.get("distlock.locks.held").gauge().value()).isZero();
        assertThat(meters.get("distlock.locks.waiting").gauge().value()).isZero();
    }

    @Test
    void templateCallsAreNamedByTheirOptionsAndTaggedWithTheirType() {
        locks.run("report:1", LockOptions.DEFAULTS.withName("nightly-report").withType(LockType.READ), () -> { });
        locks.run("report:2", LockOptions.DEFAULTS, () -> { });
        locks.execute(List.of("a", "b"), LockOptions.DEFAULTS.withName("transfer"), () -> 1);

        TestObservationRegistryAssert.assertThat(observations)
                .hasNumberOfObservationsWithNameEqualTo("distlock.lock", 3);
        assertThat(stopped.contexts.stream().map(context -> context.getLowCardinalityKeyValue("name").getValue() + "/"
                + context.getLowCardinalityKeyValue("type").getValue()))
                .containsExactlyInAnyOrder("nightly-report/read", "template/reentrant", "transfer/reentrant");
        assertThat(stopped.contexts.stream().map(context -> context.getHighCardinalityKeyValue("key").getValue()))
                .containsExactlyInAnyOrder("lock:report:1", "lock:report:2", "lock:a,lock:b");
    }

    @Test
    void aFixedLeaseThatRunsOutWhileHeldEndsAsLeaseLost() {
        locks.run("short:1", LockOptions.DEFAULTS.withLeaseTime(Duration.ofMillis(200)), () ->
                await().atMost(Duration.ofSeconds(10)).until(() -> redisCommands.exists("lock:short:1") == 0));
        assertThat(outcomes()).containsExactly("lease_lost");
    }

    private List<String> outcomes() {
        return stopped.contexts.stream().map(context -> context.getLowCardinalityKeyValue("outcome").getValue()).toList();
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(10, TimeUnit.SECONDS);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    @TestConfiguration(proxyBeanMethods = false)
    static class Config {

        /** Replaces Boot's registry; Boot still attaches its meter handler, which makes the timer checked above. */
        @Bean
        TestObservationRegistry observationRegistry() {
            return TestObservationRegistry.create();
        }

        /** An ObservationHandler bean: Boot adds it to the registry. */
        @Bean
        Stopped stopped() {
            return new Stopped();
        }

        @Bean
        Orders orders() {
            return new Orders();
        }
    }

    /** The lock observations stopped, in order, with the key-values they were stopped with. */
    static class Stopped implements ObservationHandler<LockObservationContext> {

        final Queue<LockObservationContext> contexts = new ConcurrentLinkedQueue<>();

        @Override
        public void onStop(LockObservationContext context) {
            contexts.add(context);
        }

        @Override
        public boolean supportsContext(Observation.Context context) {
            return context instanceof LockObservationContext;
        }
    }

    /** A user's service. */
    static class Orders {

        @DistributedLock(key = "'order:' + #userId")
        public void place(long userId, Runnable work) {
            work.run();
        }
    }
}

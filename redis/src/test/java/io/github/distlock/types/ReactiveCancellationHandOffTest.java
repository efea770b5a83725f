package io.github.distlock.types;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiFunction;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.DistributedLock;
import io.github.distlock.HeldLock;
import io.github.distlock.LockOptions;
import io.github.distlock.autoconfigure.DistlockProperties;
import io.github.distlock.it.LockTestApplication;
import io.github.distlock.it.RecordingLockListener;
import io.github.distlock.it.RedisIntegrationTest;
import io.github.distlock.spi.LockProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.reactivestreams.Publisher;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A {@code Mono}/{@code Flux} method's subscriber that cancels in the instant its lock has been acquired but not yet
 * handed to the method: the lock must be given back, not left held and renewed by the watchdog for nobody (the stuck
 * {@code lock:job:r*} keys {@link AsyncLockTest}'s thousand random calls left behind now and then).
 *
 * <p>The window is made deterministic by the template's acquisition future: the test's template returns one that
 * runs a hook between its completion and the moment Reactor looks at its value, and the hook cancels the subscription.
 * Watchdog timeout 1 s: a lock left behind is renewed, so it stays in Redis past any wait here.
 */
@SpringBootTest(classes = {LockTestApplication.class, ReactiveCancellationHandOffTest.Config.class},
        properties = "distlock.watchdog-timeout=1s")
class ReactiveCancellationHandOffTest extends RedisIntegrationTest {

    @Autowired
    Jobs jobs;

    @Autowired
    HandOffHook hook;

    @Autowired
    RecordingLockListener recorder;

    @AfterEach
    void reset() {
        hook.beforeReactorSeesTheLock.set(null);
        jobs.reset();
        recorder.events.clear();
    }

    @ParameterizedTest(name = "flux = {0}")
    @ValueSource(booleans = {false, true})
    void aLockAcquiredAsTheSubscriberCancelsIsGivenBack(boolean flux) throws InterruptedException {
        BaseSubscriber<String> subscriber = new BaseSubscriber<>() {
        };
        CountDownLatch cancelledWithTheLockAcquired = new CountDownLatch(1);
        hook.beforeReactorSeesTheLock.set(held -> {
            subscriber.cancel();
            cancelledWithTheLockAcquired.countDown();
        });

        (flux ? jobs.flux("handoff") : jobs.mono("handoff")).subscribe(subscriber);

        assertThat(cancelledWithTheLockAcquired.await(5, TimeUnit.SECONDS)).as("the hook cancelled").isTrue();
        assertThat(recorder.events).as("the lock was acquired").contains("acquired:lock:job:handoff");
        // two watchdog timeouts: a lock left to the watchdog is still there, renewed
        await("lock:job:handoff given back").atMost(Duration.ofSeconds(2))
                .until(() -> redisCommands.exists("lock:job:handoff") == 0);
        assertThat(recorder.events).containsSubsequence("acquired:lock:job:handoff", "released:lock:job:handoff");
        assertThat(jobs.runs()).as("the method never ran: its subscriber had gone before it got the lock").isZero();

        // and the next caller gets it
        assertThat(Flux.from(flux ? jobs.flux("handoff") : jobs.mono("handoff")).blockLast(Duration.ofSeconds(5)))
                .isEqualTo("done handoff");
        assertThat(jobs.runs()).isOne();
        assertThat(redisCommands.exists("lock:job:handoff")).isZero();
    }

    /** Lets a test act between the completion of an acquisition with a lock and Reactor's look at it. */
    static final class HandOffHook {

        final AtomicReference<java.util.function.Consumer<HeldLock>> beforeReactorSeesTheLock = new AtomicReference<>();

        CompletableFuture<HeldLock> around(CompletableFuture<HeldLock> acquisition) {
            Hooked hooked = new Hooked(acquisition);
            acquisition.whenComplete((held, failure) -> {
                if (failure != null) {
                    hooked.completeExceptionally(failure);
                }
                else if (!hooked.complete(held) && held != null) {
                    // cancelled meanwhile: as the template's own future does, give it back
                    held.releaseAsync();
                }
            });
            return hooked;
        }

        /**
         * Reactor's {@code fromFuture} reads the value through {@link #handle}: the hook runs there, once the future
         * has completed, before Reactor's own function sees the value.
         */
        final class Hooked extends CompletableFuture<HeldLock> {

            private final CompletableFuture<HeldLock> acquisition;

            Hooked(CompletableFuture<HeldLock> acquisition) {
                this.acquisition = acquisition;
            }

            @Override
            public <U> CompletableFuture<U> handle(BiFunction<? super HeldLock, Throwable, ? extends U> fn) {
                return super.handle((held, failure) -> {
                    if (held != null) {
                        java.util.function.Consumer<HeldLock> action = beforeReactorSeesTheLock.getAndSet(null);
                        if (action != null) {
                            action.accept(held);
                        }
                    }
                    return fn.apply(held, failure);
                });
            }

            @Override
            public boolean cancel(boolean mayInterruptIfRunning) {
                boolean cancelled = super.cancel(mayInterruptIfRunning);
                acquisition.cancel(false);
                return cancelled;
            }
        }
    }

    public static class Jobs {

        // read through methods: the bean is a CGLIB proxy, whose own fields are never set
        private final AtomicInteger runs = new AtomicInteger();

        public int runs() {
            return runs.get();
        }

        public void reset() {
            runs.set(0);
        }

        @DistributedLock(key = "'job:' + #id")
        public Mono<String> mono(String id) {
            return Mono.fromCallable(() -> {
                runs.incrementAndGet();
                return "done " + id;
            });
        }

        @DistributedLock(key = "'job:' + #id")
        public Flux<String> flux(String id) {
            return Flux.from(mono(id));
        }
    }

    @TestConfiguration
    static class Config {

        @Bean
        Jobs jobs() {
            return new Jobs();
        }

        @Bean
        HandOffHook handOffHook() {
            return new HandOffHook();
        }

        @Bean
        RecordingLockListener recordingLockListener() {
            return new RecordingLockListener();
        }

        /** The auto-configured template, but for the acquisition future it hands to Reactor. */
        @Bean(destroyMethod = "shutdown")
        DefaultLockTemplate lockTemplate(LockProvider provider, DistlockProperties properties, HandOffHook hook,
                RecordingLockListener recorder) {
            return new DefaultLockTemplate(provider, properties.getKeyPrefix(), properties.getWaitTime(),
                    properties.getLeaseTime(), List.of(recorder)) {
                @Override
                public CompletableFuture<HeldLock> acquireAsync(Collection<String> keys, LockOptions options) {
                    return hook.around(super.acquireAsync(keys, options));
                }
            };
        }
    }
}

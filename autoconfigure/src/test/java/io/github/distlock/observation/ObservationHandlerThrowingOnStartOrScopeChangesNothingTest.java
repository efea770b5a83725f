package io.github.distlock.observation;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LockOptions;
import io.github.distlock.spi.LockProvider;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An observation handler that throws when the observation starts, when its scope opens or when it closes must change
 * nothing about the lock call (its result, its release) nor leave the thread inside a stale scope, which the next
 * request on a pooled thread would inherit.
 */
class ObservationHandlerThrowingOnStartOrScopeChangesNothingTest {

    private final CountingLockProvider counting = new CountingLockProvider();
    private final AtomicInteger held = counting.held;

    @Test
    void aHandlerThatThrowsOnStartDoesNotFailTheCall() {
        DefaultLockTemplate template = template(handler(failing -> failing.onStart = true));
        assertThat(template.execute("k", LockOptions.DEFAULTS, () -> "ran")).isEqualTo("ran");
        assertThat(template.acquireAsync(List.of("k"), LockOptions.DEFAULTS))
                .succeedsWithin(Duration.ofSeconds(5)).satisfies(lock -> lock.releaseAsync().join());
        assertThat(held).hasValue(0);
        assertThat(template.activeLocks()).isEmpty();
    }

    @Test
    void aHandlerThatThrowsOnScopeOpenedNeitherFailsTheCallNorLeavesTheScopeOpen() {
        ObservationRegistry registry = ObservationRegistry.create();
        DefaultLockTemplate template = template(registry, handler(failing -> failing.onScopeOpened = true));
        assertThat(template.execute("k", LockOptions.DEFAULTS, () -> "ran")).isEqualTo("ran");
        // what the next request on this (pooled) thread would find
        assertThat(registry.getCurrentObservationScope()).isNull();
        assertThat(registry.getCurrentObservation()).isNull();
        assertThat(held).hasValue(0);
    }

    @Test
    void aHandlerThatThrowsOnScopeClosedDoesNotReplaceTheResultNorLeaveTheScopeOpen() {
        ObservationRegistry registry = ObservationRegistry.create();
        DefaultLockTemplate template = template(registry, handler(failing -> failing.onScopeClosed = true));
        assertThat(template.execute("k", LockOptions.DEFAULTS, () -> "ran")).isEqualTo("ran");
        assertThat(registry.getCurrentObservation()).isNull();
        assertThat(held).hasValue(0);
    }

    private DefaultLockTemplate template(FailingHandler handler) {
        return template(ObservationRegistry.create(), handler);
    }

    private DefaultLockTemplate template(ObservationRegistry registry, FailingHandler handler) {
        registry.observationConfig().observationHandler(handler);
        DefaultLockTemplate template = new DefaultLockTemplate(provider(), "lock:", Duration.ofSeconds(1), null,
                List.of());
        template.setObservationRegistry(registry);
        return template;
    }

    private static FailingHandler handler(Consumer<FailingHandler> setup) {
        FailingHandler handler = new FailingHandler();
        setup.accept(handler);
        return handler;
    }

    private LockProvider provider() {
        return counting;
    }

    static final class FailingHandler implements ObservationHandler<Observation.Context> {

        boolean onStart;
        boolean onScopeOpened;
        boolean onScopeClosed;

        @Override
        public void onStart(Observation.Context context) {
            if (onStart) {
                throw new IllegalStateException("broken tracer: onStart");
            }
        }

        @Override
        public void onScopeOpened(Observation.Context context) {
            if (onScopeOpened) {
                throw new IllegalStateException("broken tracer: onScopeOpened");
            }
        }

        @Override
        public void onScopeClosed(Observation.Context context) {
            if (onScopeClosed) {
                throw new IllegalStateException("broken tracer: onScopeClosed");
            }
        }

        @Override
        public boolean supportsContext(Observation.Context context) {
            return true;
        }
    }
}

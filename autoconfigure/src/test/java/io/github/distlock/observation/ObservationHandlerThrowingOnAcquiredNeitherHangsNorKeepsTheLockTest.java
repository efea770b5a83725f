package io.github.distlock.observation;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LockOptions;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * An observation handler that throws in onEvent (the ACQUIRED event) must not leave the caller waiting forever with a
 * lock it holds: tracing is a side concern, and a broken tracer must not turn into a stuck lock.
 */
class ObservationHandlerThrowingOnAcquiredNeitherHangsNorKeepsTheLockTest {

    @Test
    void aHandlerThatThrowsOnTheAcquiredEventNeitherHangsTheCallerNorKeepsTheLock() {
        CountingLockProvider provider = new CountingLockProvider();
        AtomicInteger held = provider.held;
        ObservationRegistry registry = ObservationRegistry.create();
        registry.observationConfig().observationHandler(new ObservationHandler<Observation.Context>() {
            @Override
            public void onEvent(Observation.Event event, Observation.Context context) {
                throw new IllegalStateException("broken tracer");
            }

            @Override
            public boolean supportsContext(Observation.Context context) {
                return true;
            }
        });
        DefaultLockTemplate template = new DefaultLockTemplate(provider, "lock:", Duration.ofSeconds(1), null, List.of());
        template.setObservationRegistry(registry);

        assertTimeoutPreemptively(Duration.ofSeconds(5), () -> {
            try {
                template.execute("k", LockOptions.DEFAULTS, () -> "ran");
            }
            catch (RuntimeException ex) {
                // failing the call is acceptable; hanging is not
            }
        }, "the lock call hangs forever after an observation handler threw on the ACQUIRED event");
        assertThat(held).as("locks still held").hasValue(0);
        assertThat(template.activeLocks()).isEmpty();
    }
}

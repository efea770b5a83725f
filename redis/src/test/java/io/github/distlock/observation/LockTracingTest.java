package io.github.distlock.observation;

import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import io.github.distlock.LockTemplate;
import io.github.distlock.it.LockTestApplication;
import io.github.distlock.it.RedisIntegrationTest;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.test.simple.SimpleSpan;
import io.micrometer.tracing.test.simple.SimpleTracer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * With a tracer (Micrometer Tracing's in-memory one, registered as an observation handler the way Boot registers a real
 * tracer's), every lock call is one span over wait and hold, tagged with name, type and outcome and the key, and the
 * guarded code runs inside it, on a real redis-server.
 */
@SpringBootTest(classes = {LockTestApplication.class, LockTracingTest.Config.class})
class LockTracingTest extends RedisIntegrationTest {

    @Autowired
    SimpleTracer tracer;

    @Autowired
    LockObservationTest.Orders orders;

    @Autowired
    LockTemplate locks;

    @BeforeEach
    void clear() {
        tracer.getSpans().clear();
    }

    @Test
    void eachLockCallIsOneSpanAndTheGuardedCodeRunsInsideIt() {
        AtomicReference<Span> inside = new AtomicReference<>();
        orders.place(7, () -> inside.set(tracer.currentSpan()));
        locks.run("report:9", () -> { });

        List<SimpleSpan> spans = List.copyOf(tracer.getSpans());
        assertThat(spans).as("one span per lock call").hasSize(2);
        SimpleSpan annotated = spans.get(0);
        assertThat(annotated.getName()).isEqualTo("lock Orders.place");
        assertThat(annotated.getTags()).containsEntry("name", "Orders.place").containsEntry("type", "reentrant")
                .containsEntry("outcome", "released").containsEntry("key", "lock:order:7");
        assertThat(annotated.getEndTimestamp()).isAfterOrEqualTo(annotated.getStartTimestamp());
        // spans the guarded code starts are children of the lock's span
        assertThat(inside.get()).isNotNull();
        assertThat(inside.get().context().spanId()).isEqualTo(annotated.context().spanId());
        assertThat(spans.get(1).getTags()).containsEntry("name", "template").containsEntry("key", "lock:report:9");
        assertThat(tracer.currentSpan()).as("no span left current on the caller's thread").isNull();
    }

    @TestConfiguration(proxyBeanMethods = false)
    static class Config {

        @Bean
        SimpleTracer tracer() {
            return new SimpleTracer();
        }

        /** An ObservationHandler bean: Boot adds it to its observation registry, as it adds a real tracer's. */
        @Bean
        DefaultTracingObservationHandler tracingHandler(SimpleTracer tracer) {
            return new DefaultTracingObservationHandler(tracer);
        }

        @Bean
        LockObservationTest.Orders orders() {
            return new LockObservationTest.Orders();
        }
    }
}

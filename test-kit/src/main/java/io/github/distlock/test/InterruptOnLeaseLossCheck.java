package io.github.distlock.test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LeaseLostPolicy;
import io.github.distlock.LockEvent;
import io.github.distlock.LockLeaseLostException;
import io.github.distlock.LockListener;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.spi.LockProvider;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Checks {@link LeaseLostPolicy#INTERRUPT} against a backend's real loss of a lock: code that waits under the lock is
 * interrupted within a bound of the loss's report, and the call fails with {@link LockLeaseLostException} naming the
 * key, caused by the code's {@link InterruptedException}. The backend test brings the loss (a stalled server, a
 * connection cut through a proxy, an expired session) and, where it stalls something, the heal.
 *
 * <pre>{@code
 * InterruptOnLeaseLossCheck check = InterruptOnLeaseLossCheck.on(provider);
 * check.run("stalled", Duration.ofMillis(333), proxy::pause, proxy::resume);
 * }</pre>
 */
public final class InterruptOnLeaseLossCheck {

    private final LockTemplate template;
    private final LossClock clock;
    private final boolean ownTemplate;

    private InterruptOnLeaseLossCheck(LockTemplate template, LossClock clock, boolean ownTemplate) {
        this.template = template;
        this.clock = clock;
        this.ownTemplate = ownTemplate;
    }

    /** A check through a template of its own on {@code provider}, with the key prefix {@code lock:}. */
    public static InterruptOnLeaseLossCheck on(LockProvider provider) {
        LossClock clock = new LossClock();
        return new InterruptOnLeaseLossCheck(new DefaultLockTemplate(provider, "lock:", Duration.ZERO, null,
                List.of(clock)), clock, true);
    }

    /** A check through an application's template, whose listeners include {@code clock}. */
    public static InterruptOnLeaseLossCheck on(LockTemplate template, LossClock clock) {
        return new InterruptOnLeaseLossCheck(template, clock, false);
    }

    /**
     * Holds {@code key} with {@link LeaseLostPolicy#INTERRUPT} around code that waits, runs {@code loseLock}, and
     * asserts the code was interrupted within {@code withinReport} of the loss's report; {@code heal} runs afterwards in
     * every outcome.
     */
    public void run(String key, Duration withinReport, ThrowingRunnable loseLock, ThrowingRunnable heal)
            throws Exception {
        CountDownLatch held = new CountDownLatch(1);
        CompletableFuture<Long> stoppedAt = new CompletableFuture<>();
        CompletableFuture<Object> call = CompletableFuture.supplyAsync(() -> {
            try {
                return template.execute(key, LockOptions.DEFAULTS.withLeaseLostPolicy(LeaseLostPolicy.INTERRUPT),
                        () -> {
                            held.countDown();
                            try {
                                return new CountDownLatch(1).await(30, TimeUnit.SECONDS);
                            }
                            catch (InterruptedException ex) {
                                stoppedAt.complete(System.nanoTime());
                                throw ex;
                            }
                        });
            }
            catch (InterruptedException ex) {
                throw new CompletionException(ex);
            }
        });
        try {
            assertThat(held.await(10, TimeUnit.SECONDS)).as("the lock of '%s' taken", key).isTrue();
            long stopped;
            try {
                loseLock.run();
                stopped = stoppedAt.get(20, TimeUnit.SECONDS);
            }
            finally {
                heal.run();
            }
            assertThat(clock.reportedAt).as("the loss reported").succeedsWithin(Duration.ofSeconds(1));
            assertThat(Duration.ofNanos(stopped - clock.reportedAt.join())).as("from the report to the code's stop")
                    .isLessThan(withinReport);
            assertThat(call).failsWithin(Duration.ofSeconds(15)).withThrowableThat().havingCause()
                    .isInstanceOf(LockLeaseLostException.class)
                    .withMessageStartingWith("Lock '" + template.fullKey(key) + "' was lost while its code ran")
                    .withCauseInstanceOf(InterruptedException.class);
        }
        finally {
            if (ownTemplate && template instanceof DefaultLockTemplate own) {
                own.shutdown();
            }
        }
    }

    /** A step that may throw: the loss or the heal. */
    @FunctionalInterface
    public interface ThrowingRunnable {

        void run() throws Exception;
    }

    /** Notes when a lease was first reported lost; register it as a listener of the template under test. */
    public static final class LossClock implements LockListener {

        final CompletableFuture<Long> reportedAt = new CompletableFuture<>();

        @Override
        public void onLeaseLost(LockEvent event) {
            reportedAt.complete(System.nanoTime());
        }
    }
}

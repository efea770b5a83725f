package io.github.distlock.testsupport;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Polls a condition until it holds or a deadline passes. Server readiness, cluster state and failovers can only be
 * observed by asking again; this is the one place that waits between the questions.
 */
final class Poll {

    /** Short enough that a 0.25 s server start or a 1 s failover is seen within a few percent of its real cost. */
    private static final long INTERVAL_MILLIS = 20;

    private Poll() {
    }

    /**
     * Asks {@code probe} until it returns a value, and returns that value.
     *
     * <p>A probe that throws counts as "not yet" (a server that is still starting refuses connections, a node that is
     * still joining answers errors); the last such failure is attached to the timeout exception. A {@link GiveUp}
     * ends the wait at once (a server whose process exited will not come up by being asked again).
     *
     * @param timeout how long to keep asking
     * @param what what is awaited, for the timeout message
     * @param probe empty while the condition does not hold
     * @return the probe's first value
     * @throws IllegalStateException when the deadline passes first, or the waiting thread is interrupted
     */
    static <T> T until(Duration timeout, Supplier<String> what, Supplier<Optional<T>> probe) {
        long deadline = System.nanoTime() + timeout.toNanos();
        RuntimeException lastFailure = null;
        while (true) {
            try {
                Optional<T> value = probe.get();
                if (value.isPresent()) {
                    return value.get();
                }
                lastFailure = null;
            }
            catch (GiveUp ex) {
                throw ex;
            }
            catch (RuntimeException ex) {
                lastFailure = ex;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("Timed out after " + timeout + " waiting for " + what.get(),
                        lastFailure);
            }
            try {
                TimeUnit.MILLISECONDS.sleep(INTERVAL_MILLIS);
            }
            catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("Interrupted while waiting for " + what.get(), ex);
            }
        }
    }

    /**
     * Asks {@code condition} until it is true.
     *
     * @see #until(Duration, Supplier, Supplier)
     */
    static void untilTrue(Duration timeout, Supplier<String> what, Supplier<Boolean> condition) {
        until(timeout, what, () -> condition.get() ? Optional.of(Boolean.TRUE) : Optional.empty());
    }

    /** Thrown by a probe when waiting longer is pointless; {@link #until} rethrows it at once. */
    static class GiveUp extends RuntimeException {

        GiveUp(String message) {
            super(message);
        }
    }
}

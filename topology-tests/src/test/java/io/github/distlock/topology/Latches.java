package io.github.distlock.topology;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** Latch waits for lambdas that may not throw checked exceptions, bounded so a broken test fails instead of hanging. */
final class Latches {

    private Latches() {
    }

    static void await(CountDownLatch latch) {
        try {
            if (!latch.await(60, TimeUnit.SECONDS)) {
                throw new AssertionError("Latch not released within 60 s");
            }
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new AssertionError("Interrupted while waiting", ex);
        }
    }
}

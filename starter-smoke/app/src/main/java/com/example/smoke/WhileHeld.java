package com.example.smoke;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Component;

/**
 * The body of the locked method: it says that it runs (so the runner can try the key from another thread) and then
 * keeps the lock until run.sh, having looked at the lock's key in Redis, creates the release file.
 */
@Component
public class WhileHeld {

    private static final Duration MAX_HOLD = Duration.ofSeconds(60);

    private final Path releaseFile;
    private final CountDownLatch entered = new CountDownLatch(1);
    private final AtomicInteger inside = new AtomicInteger();

    public WhileHeld(@Value("${smoke.release-file}") String releaseFile) {
        this.releaseFile = Path.of(releaseFile);
    }

    Order run(long userId, OrderRequest request) {
        if (inside.incrementAndGet() > 1) {
            throw new IllegalStateException("SMOKE FAIL: a second call ran while the first one held the lock");
        }
        try {
            entered.countDown();
            long deadline = System.nanoTime() + MAX_HOLD.toNanos();
            while (!Files.exists(releaseFile)) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("SMOKE FAIL: no " + releaseFile + " within " + MAX_HOLD);
                }
                TimeUnit.MILLISECONDS.sleep(20);
            }
            return new Order(userId, request.item());
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("SMOKE FAIL: interrupted while holding the lock", ex);
        }
        finally {
            inside.decrementAndGet();
        }
    }

    boolean awaitEntered(Duration timeout) throws InterruptedException {
        return entered.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }
}

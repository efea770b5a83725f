package io.github.distlock.it;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/** A lock held by a thread of its own, as another caller would hold it, until {@link #release()}. */
public final class HeldElsewhere implements AutoCloseable {

    private final CountDownLatch release = new CountDownLatch(1);
    private final CompletableFuture<Void> done;

    private HeldElsewhere(LockTemplate template, String key, LockOptions options, CountDownLatch acquired) {
        // a thread of its own: on the common pool (one thread on 2 cores with Java 25) a second holder would wait
        // behind the first one's hold
        done = new CompletableFuture<>();
        Thread thread = new Thread(() -> {
            try {
                template.run(key, options, () -> {
                    acquired.countDown();
                    if (!release.await(30, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("holder of " + key + " was never released");
                    }
                });
                done.complete(null);
            }
            catch (Throwable ex) {
                done.completeExceptionally(ex);
            }
        }, "held-elsewhere-" + key);
        thread.setDaemon(true);
        thread.start();
    }

    /** Holds {@code key} with the configured defaults; returns once it is held. */
    public static HeldElsewhere hold(LockTemplate template, String key) {
        return hold(template, key, LockOptions.DEFAULTS);
    }

    /** Holds {@code key} with {@code options}; returns once it is held. */
    public static HeldElsewhere hold(LockTemplate template, String key, LockOptions options) {
        CountDownLatch acquired = new CountDownLatch(1);
        HeldElsewhere holder = new HeldElsewhere(template, key, options, acquired);
        try {
            assertThat(acquired.await(10, TimeUnit.SECONDS)).as("holder acquired " + key).isTrue();
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        }
        return holder;
    }

    /** Lets the holder release, without waiting for it. */
    public void releaseLater() {
        release.countDown();
    }

    /** Lets the holder release and waits until it has. */
    public void release() throws Exception {
        release.countDown();
        done.handle((ignored, failure) -> null).get(10, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws Exception {
        release();
    }
}

package io.github.distlock.redisson;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/** Waiting for Redisson's futures, and reaching the failure inside their wrapping. */
final class Futures {

    private Futures() {
    }

    static <T> T join(CompletableFuture<T> future) {
        try {
            return future.join();
        }
        catch (CompletionException ex) {
            throw (ex.getCause() instanceof RuntimeException cause) ? cause : ex;
        }
    }

    static Throwable unwrap(Throwable failure) {
        return (failure instanceof CompletionException && failure.getCause() != null) ? failure.getCause() : failure;
    }
}

package io.github.distlock;

import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

/**
 * Locks taken by {@link LockTemplate#acquireAsync}, held until {@link #releaseAsync()}: for code whose work ends
 * later than the call that started it (a {@code CompletableFuture}, a {@code Mono}). Not re-entrant: a nested call on
 * one of its keys is another owner and waits like any other caller.
 */
public interface HeldLock {

    /** The full keys held, prefix included, in the order they were taken. */
    List<String> keys();

    /** The fencing token of the first key when the lock is fenced, otherwise empty. */
    OptionalLong fencingToken();

    /**
     * Releases every key, by this owner only, once (later calls return the same future). Never completes
     * exceptionally: a failure to release is logged and reported to listeners, and the lock expires by itself. With
     * {@link LockOptions#holdAtLeast()} the release happens in the background once that time is over; the future
     * completes when the release was made or scheduled.
     */
    CompletableFuture<Void> releaseAsync();
}

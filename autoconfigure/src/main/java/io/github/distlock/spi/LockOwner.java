package io.github.distlock.spi;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Who holds a lock: one value per acquisition, never a thread. A pooled thread serves request after request, so "the
 * current thread" would let the next request re-enter a lock an earlier one left behind; an asynchronous call may
 * finish on another thread than the one that locked. Re-entry of a lock by nested calls is tracked by the caller
 * ({@link io.github.distlock.LockTemplate}), not by the backend.
 *
 * @param id unique within this process for its lifetime; a backend makes it unique across processes by adding its own
 * client identity (Redisson: {@code <client id>:<owner id>})
 */
public record LockOwner(long id) {

    /**
     * Owner ids start far above any thread id (thread ids count up from 1), so that an owner of ours can never be
     * mistaken for a thread's lock taken with plain Redisson in the same client.
     */
    private static final AtomicLong NEXT = new AtomicLong(1L << 52);

    /** A new owner, different from every other one this process has made. */
    public static LockOwner next() {
        return new LockOwner(NEXT.getAndIncrement());
    }
}

package io.github.distlock.test;

import java.util.concurrent.ScheduledFuture;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockOwner;

/** One owner's lock of one key in an {@link InMemoryLockTable}; its mutable fields change under the mutex only. */
final class InMemoryHold {

    final InMemoryLockTable table;
    final String key;
    /** The key its request named: {@link #key} but for a semaphore, whose state has a key of its own. */
    final String requestKey;
    final LockOwner owner;
    final LockType type;
    final boolean watchdog;
    final InMemoryHandle handle;
    long expiresAt;
    boolean held = true;
    ScheduledFuture<?> expiry;
    /** The permits it was admitted under (1 for a lock). */
    int permits = 1;

    InMemoryHold(InMemoryLockTable table, String key, String requestKey, LockOwner owner, LockType type,
            boolean watchdog, long expiresAt) {
        this.table = table;
        this.key = key;
        this.requestKey = requestKey;
        this.owner = owner;
        this.type = type;
        this.watchdog = watchdog;
        this.expiresAt = expiresAt;
        this.handle = new InMemoryHandle(this);
    }
}

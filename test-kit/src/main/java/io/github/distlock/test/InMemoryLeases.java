package io.github.distlock.test;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockRequest;

/**
 * The leases of an {@link InMemoryLockTable}: a hold taken with its deadline, a fixed lease expiring by the clock, a
 * watchdog lease that lasts until its holder is {@linkplain #abandon abandoned}. Runs under the table's mutex, except
 * {@link #expireDue}, the timer's task.
 */
final class InMemoryLeases {

    /** A watchdog hold that nobody abandoned never expires: its deadline is this far away (≈ 146 years). */
    private static final long NEVER = Long.MAX_VALUE / 2;

    private final InMemoryLockTable table;
    private final long watchdogNanos;

    InMemoryLeases(InMemoryLockTable table, long watchdogNanos) {
        this.table = table;
        this.watchdogNanos = watchdogNanos;
    }

    InMemoryHold take(InMemoryKeyState state, LockRequest request, long now) {
        long expiresAt = request.watchdog() ? now + NEVER : LockDurations.deadline(now, request.leaseNanos());
        InMemoryHold hold = new InMemoryHold(table, state.key, request.key(), request.owner(), request.type(),
                request.watchdog(), expiresAt);
        hold.permits = request.permits();
        if (request.fenced()) {
            hold.handle.token = table.nextToken(state.key);
        }
        state.holds.add(hold);
        if (!request.watchdog()) {
            hold.expiry = table.timer.schedule(() -> expireDue(state.key), request.leaseNanos(), TimeUnit.NANOSECONDS);
        }
        return hold;
    }

    /** Drops holds whose lease has run out; {@code afterwards} collects what must happen outside the mutex. */
    void purgeExpired(InMemoryKeyState state, long now, List<Runnable> afterwards) {
        boolean freed = false;
        for (Iterator<InMemoryHold> it = state.holds.iterator(); it.hasNext();) {
            InMemoryHold hold = it.next();
            if (hold.expiresAt - now <= 0) {
                it.remove();
                hold.held = false;
                freed = true;
            }
        }
        if (freed) {
            table.grantWaiters(state, now, afterwards);
        }
    }

    void expireDue(String key) {
        List<Runnable> afterwards = new ArrayList<>();
        table.mutex.lock();
        try {
            InMemoryKeyState state = table.keys.get(key);
            if (state != null) {
                purgeExpired(state, System.nanoTime(), afterwards);
                table.forgetIfIdle(state);
            }
        }
        finally {
            table.mutex.unlock();
        }
        table.runOffTimer(afterwards);
    }

    /** A watchdog hold stops being renewed: it expires one watchdog timeout from now. Under the mutex. */
    void abandon(InMemoryHold hold) {
        if (hold.held && hold.watchdog) {
            hold.expiresAt = System.nanoTime() + watchdogNanos;
            hold.expiry = table.timer.schedule(() -> expireDue(hold.key), watchdogNanos, TimeUnit.NANOSECONDS);
        }
    }
}

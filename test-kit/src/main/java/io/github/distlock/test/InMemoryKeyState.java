package io.github.distlock.test;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

import io.github.distlock.LockType;

/**
 * What one key of an {@link InMemoryLockProvider} has: its holders (several only for READ, or for permits) and its
 * queue of waiters, in arrival order; and the rule of which lock kinds may join them. Changed under the table's mutex
 * only.
 */
final class InMemoryKeyState {

    final String key;
    final List<InMemoryHold> holds = new ArrayList<>(1);
    final ArrayDeque<InMemoryWaiter> waiters = new ArrayDeque<>();

    InMemoryKeyState(String key) {
        this.key = key;
    }

    /**
     * Whether a lock of {@code type} can be granted now: nothing held, or only readers and a reader asks; and, for a
     * {@code FAIR} request, no live {@code FAIR} waiter queued before {@code self} (the request itself when queued).
     */
    boolean grantable(LockType type, int permits, InMemoryWaiter self) {
        if (permits > 1) {
            // a semaphore's state holds only its permits (its own key, as on Redis); callers that disagree on N are
            // held to the smallest N among them and the holders, so no holder's "at most N" is broken
            int limit = permits;
            for (InMemoryHold hold : holds) {
                limit = Math.min(limit, hold.permits);
            }
            return holds.size() < limit;
        }
        boolean compatible = holds.isEmpty()
                || (type == LockType.READ && holds.stream().allMatch(hold -> hold.type == LockType.READ));
        if (!compatible || type != LockType.FAIR) {
            return compatible;
        }
        for (InMemoryWaiter waiter : waiters) {
            if (waiter == self) {
                return true;
            }
            if (waiter.request.type() == LockType.FAIR && !waiter.future.isDone()) {
                return false;
            }
        }
        return true;
    }

    boolean idle() {
        return holds.isEmpty() && waiters.isEmpty();
    }
}

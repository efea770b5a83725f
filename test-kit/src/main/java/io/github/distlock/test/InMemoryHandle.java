package io.github.distlock.test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;

/** The handle of one {@link InMemoryHold}: its release, its fencing tokens and the report of its loss. */
final class InMemoryHandle implements LockHandle {

    private final InMemoryHold hold;
    private final InMemoryLockTable table;
    volatile long token = -1;
    volatile String lostReason;
    private volatile Consumer<String> lostCallback;
    private volatile boolean lossReported;
    private final AtomicBoolean lossFired = new AtomicBoolean();

    InMemoryHandle(InMemoryHold hold) {
        this.hold = hold;
        this.table = hold.table;
    }

    InMemoryHold hold() {
        return hold;
    }

    @Override
    public long fencingToken() {
        return token;
    }

    @Override
    public long newFencingToken() {
        if (hold.type == LockType.READ) {
            throw new UnsupportedOperationException("READ locks take no fencing token");
        }
        table.mutex.lock();
        try {
            if (!current()) {
                return -1;
            }
            token = table.nextToken(hold.key);
            return token;
        }
        finally {
            table.mutex.unlock();
        }
    }

    /**
     * Whether the hold is still its key's, its lease included; under the mutex. An expired hold not purged yet
     * counts as gone: its timer is about to purge it.
     */
    private boolean current() {
        return hold.held && hold.expiresAt - System.nanoTime() > 0;
    }

    @Override
    public CompletableFuture<Boolean> releaseAsync() {
        SimulatedBackendFailure failure = table.faults.release(hold.requestKey);
        if (failure != null) {
            // the backend never heard of the release: the lock stays until it expires by itself, as in a real one
            table.mutex.lock();
            try {
                table.leases.abandon(hold);
            }
            finally {
                table.mutex.unlock();
            }
            return CompletableFuture.failedFuture(failure);
        }
        List<Runnable> afterwards = new ArrayList<>();
        boolean released;
        table.mutex.lock();
        try {
            InMemoryKeyState state = table.keys.get(hold.key);
            if (state != null) {
                table.leases.purgeExpired(state, System.nanoTime(), afterwards);
            }
            released = hold.held;
            if (released) {
                hold.held = false;
                if (hold.expiry != null) {
                    hold.expiry.cancel(false);
                }
                state.holds.remove(hold);
                table.grantWaiters(state, System.nanoTime(), afterwards);
                table.forgetIfIdle(state);
            }
            else if (state != null) {
                table.forgetIfIdle(state);
            }
        }
        finally {
            table.mutex.unlock();
        }
        CompletableFuture<Void> delivered = InMemoryGrant.runAfterwards(afterwards);
        return delivered.isDone() ? CompletableFuture.completedFuture(released)
                : delivered.thenApply(ignored -> released);
    }

    @Override
    public void whenLost(Consumer<String> callback) {
        lostCallback = callback;
        if (lostReason != null) {
            fireLost();
        }
    }

    /** Reports the loss once, on a callback thread, whichever of loss and registration comes second. */
    void fireLost() {
        Consumer<String> callback = lostCallback;
        if (lostReason == null) {
            return;
        }
        if (callback != null && lossFired.compareAndSet(false, true)) {
            lossReported = true;
            String reason = lostReason;
            try {
                table.callbacks.execute(() -> callback.accept(reason));
            }
            catch (java.util.concurrent.RejectedExecutionException closing) {
                // closed: nobody is left to tell
            }
        }
    }

    @Override
    public boolean lostWhileHeld() {
        return lossReported;
    }

    @Override
    public boolean stillHeld() {
        table.mutex.lock();
        try {
            return current();
        }
        finally {
            table.mutex.unlock();
        }
    }

    @Override
    public String toString() {
        return "InMemoryLock[" + hold.key + ", " + hold.type + ", owner " + hold.owner.id() + (hold.held ? "" : ", gone")
                + "]";
    }
}

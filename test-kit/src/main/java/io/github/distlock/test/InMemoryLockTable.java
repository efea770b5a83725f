package io.github.distlock.test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.locks.ReentrantLock;

import io.github.distlock.spi.LockHandle;

/**
 * The state of an {@link InMemoryLockProvider}: its keys, the fencing tokens and closed keys that outlive them, the
 * threads it decides and answers on; and its queue of waiters: who is granted when a key frees, who times out, who
 * leaves. Leases live in {@link InMemoryLeases}.
 */
final class InMemoryLockTable {

    /**
     * One lock for all state: the provider is for tests, where clarity beats throughput, and one lock makes every
     * decision (grant, expiry, release, timeout, cancellation) trivially atomic. Futures are completed only after it
     * is unlocked, so that callers' continuations (which may acquire again) never run inside it.
     */
    final ReentrantLock mutex = new ReentrantLock();
    final Map<String, InMemoryKeyState> keys = new HashMap<>();
    /** Last fencing token per key; outlives the key's state so that tokens keep growing after every release. */
    private final Map<String, Long> tokens = new HashMap<>();
    /** Keys closed by {@link InMemoryLockProvider#closeKey}, with their reason. */
    final Map<String, String> closedKeys = new HashMap<>();
    final ScheduledThreadPoolExecutor timer;
    /**
     * Loss reports, the completions the timer causes and every grant to a queued waiter run here, never on the timer
     * nor on the thread whose release (or cancellation, or expiry) made the grant: see {@link InMemoryGrant}. A
     * callback that blocks must not hold up expiries or wait timeouts. Daemon threads, started on demand and gone when
     * idle; stopped by {@link InMemoryLockProvider#close()}.
     */
    final ExecutorService callbacks;
    final InMemoryLeases leases;
    /** What a test told the provider to do wrong: see {@link LockFaults}. */
    final InMemoryFaults faults = new InMemoryFaults();

    InMemoryLockTable(long watchdogNanos) {
        this.timer = new ScheduledThreadPoolExecutor(1, task -> daemon(task, "distlock-in-memory-timer"));
        // released and answered waiters cancel their timers: don't keep thousands of dead tasks queued
        this.timer.setRemoveOnCancelPolicy(true);
        this.callbacks = Executors.newCachedThreadPool(task -> daemon(task, "distlock-in-memory-callback"));
        this.leases = new InMemoryLeases(this, watchdogNanos);
    }

    private static Thread daemon(Runnable task, String name) {
        Thread thread = new Thread(task, name);
        thread.setDaemon(true);
        return thread;
    }

    long nextToken(String key) {
        return tokens.merge(key, 1L, Long::sum);
    }

    /** Grants the waiters that can hold now, in queue order; a blocked {@code FAIR} waiter blocks later ones. */
    void grantWaiters(InMemoryKeyState state, long now, List<Runnable> afterwards) {
        for (Iterator<InMemoryWaiter> it = state.waiters.iterator(); it.hasNext();) {
            InMemoryWaiter waiter = it.next();
            if (waiter.future.isDone()) {
                it.remove();
                continue;
            }
            if (state.grantable(waiter.request.type(), waiter.request.permits(), waiter)) {
                it.remove();
                waiter.timeout.cancel(false);
                InMemoryHold hold = leases.take(state, waiter.request, now);
                afterwards.add(new InMemoryGrant(waiter.future, hold));
            }
        }
    }

    void timeOut(InMemoryKeyState state, InMemoryWaiter waiter) {
        List<Runnable> afterwards = new ArrayList<>();
        mutex.lock();
        try {
            if (!state.waiters.remove(waiter)) {
                return;
            }
            afterwards.add(() -> waiter.future.complete(null));
            // its leaving may unblock FAIR waiters queued behind it (a reader holds, a FAIR writer waited)
            grantWaiters(state, System.nanoTime(), afterwards);
            forgetIfIdle(state);
        }
        finally {
            mutex.unlock();
        }
        runOffTimer(afterwards);
    }

    /**
     * Completes futures for work the timer found: on another thread, so that a caller's continuation that blocks cannot
     * stall the timer (and with it every expiry and wait timeout of this provider).
     */
    void runOffTimer(List<Runnable> afterwards) {
        if (afterwards.isEmpty()) {
            return;
        }
        try {
            callbacks.execute(() -> afterwards.forEach(Runnable::run));
        }
        catch (java.util.concurrent.RejectedExecutionException closing) {
            afterwards.forEach(Runnable::run);
        }
    }

    void leaveQueue(String key, CompletableFuture<LockHandle> future) {
        List<Runnable> afterwards = new ArrayList<>();
        mutex.lock();
        try {
            InMemoryKeyState state = keys.get(key);
            if (state != null && state.waiters.removeIf(waiter -> {
                if (waiter.future == future) {
                    waiter.timeout.cancel(false);
                    return true;
                }
                return false;
            })) {
                grantWaiters(state, System.nanoTime(), afterwards);
                forgetIfIdle(state);
            }
        }
        finally {
            mutex.unlock();
        }
        InMemoryGrant.runAfterwards(afterwards).join();
    }

    void forgetIfIdle(InMemoryKeyState state) {
        if (state.idle()) {
            keys.remove(state.key, state);
        }
    }
}

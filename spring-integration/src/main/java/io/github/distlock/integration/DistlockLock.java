package io.github.distlock.integration;

import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import io.github.distlock.HeldLock;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.spi.LockDurations;
import org.jspecify.annotations.Nullable;
import org.springframework.integration.support.locks.DistributedLock;

/**
 * A {@link java.util.concurrent.locks.Lock} of a {@link DistlockLockRegistry}: one distlock key, held in the backend
 * through {@link LockTemplate#acquireAsync} (so every acquisition shows in distlock's metrics, listeners and
 * actuator endpoint) and owned by the thread that took it, as the locks of Spring Integration's own registries are.
 *
 * <ul>
 * <li>Re-entrant per thread: a thread that holds it takes it again at once, and the backend lock is released when its
 * last hold is. A re-entry first asks the backend whether the hold is still this owner's; when it was lost (its
 * lease ran out, renewal failed), the re-entry takes the key again in the backend, and a {@code tryLock} that can't
 * have it within its wait returns {@code false}. That is how {@code LockRegistryLeaderInitiator}'s heart beat (a
 * {@code tryLock} by the leader) notices a lost leadership.</li>
 * <li>One thread of this instance at a time: other threads of the process wait locally, and only the owner thread
 * talks to the backend.</li>
 * <li>{@link #unlock()} by a thread that does not hold it throws {@link IllegalMonitorStateException}; an unlock
 * after the backend reported the lock lost releases what is left and throws {@link IllegalStateException}, since the
 * work it guarded may have run beside another holder.</li>
 * <li>{@link #lock()} waits until the lock is free and is not interrupted; {@link #lockInterruptibly()} and
 * {@code tryLock(time, unit)} stop waiting on an interrupt and give back whatever the backend still grants.</li>
 * <li>Without a ttl the lock is renewed by distlock's watchdog while held ({@code distlock.watchdog-timeout}: a dead
 * holder's lock expires after it); {@link #lock(Duration)} and {@link #tryLock(Duration, Duration)} take a fixed
 * lease instead, after which the lock expires even when still held.</li>
 * <li>Fenced when the registry is: {@link #fencingToken()} is the token of the current hold.</li>
 * <li>{@link #newCondition()} is not supported.</li>
 * </ul>
 */
public final class DistlockLock implements DistributedLock {

    private final LockTemplate template;

    private final String key;

    private final String fullKey;

    private final LockOptions options;

    /** Thread ownership and re-entry within this process. */
    private final ReentrantLock local = new ReentrantLock();

    /** The backend hold of the owner thread, {@code null} when none; written by the owner thread only. */
    private volatile @Nullable HeldLock held;

    /** The local hold count at which {@link #held} was taken: its release is due when that hold ends. */
    private int heldAtDepth;

    /** Whether {@link #held} has a fixed lease (no watchdog renewal). */
    private boolean fixedLease;

    /** A re-entry found the backend hold lost (owner thread only): the outermost unlock reports it. */
    private boolean lossSeen;

    /** The depth of the hold that was lost: a hold taken anew after the loss backs it, not the re-entry's. */
    private int lostAtDepth;

    volatile long lastUsed = System.currentTimeMillis();

    DistlockLock(LockTemplate template, String key, LockOptions options) {
        this.template = template;
        this.key = key;
        this.fullKey = template.fullKey(key);
        this.options = options;
    }

    /** The distlock key of this lock, without {@code distlock.key-prefix}. */
    public String key() {
        return key;
    }

    /** The key the backend stores, {@code distlock.key-prefix} included. */
    public String fullKey() {
        return fullKey;
    }

    /** Whether the calling thread holds this lock (as far as this process knows). */
    public boolean isHeldByCurrentThread() {
        return local.isHeldByCurrentThread();
    }

    /**
     * The fencing token of the hold of the calling thread, or empty when it holds none or the registry is not fenced.
     * Tokens of a key only grow: storage that keeps the highest token it accepted can refuse a write carrying a lower
     * one, which is what a holder whose lease ran out during a pause would send.
     */
    public OptionalLong fencingToken() {
        HeldLock hold = held;
        return (hold != null && local.isHeldByCurrentThread()) ? hold.fencingToken() : OptionalLong.empty();
    }

    @Override
    public void lock() {
        lock(null, "lock()");
    }

    /**
     * Takes the lock with a fixed lease of {@code ttl}, waiting until it is free (not interrupted).
     *
     * @throws IllegalArgumentException when {@code ttl} is below 1 ms
     */
    @Override
    public void lock(Duration ttl) {
        lock(checkedTtl(ttl, "lock(ttl)"), "lock(ttl)");
    }

    private void lock(@Nullable Duration ttl, String method) {
        local.lock();
        try {
            // an uninterruptible wait until the lock is free: a "not acquired" answer can only be a backend's limit
            if (!backendAcquire(LockDurations.FOR_EVER_NANOS, ttl, false)) {
                throw new IllegalStateException(method + " on '" + fullKey + "' was refused by the backend");
            }
        }
        catch (RuntimeException | Error ex) {
            local.unlock();
            throw ex;
        }
        catch (InterruptedException ex) {
            // not thrown by an uninterruptible wait; kept as an interrupt should it ever be
            local.unlock();
            Thread.currentThread().interrupt();
            throw new IllegalStateException(method + " on '" + fullKey + "' was interrupted", ex);
        }
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        local.lockInterruptibly();
        acquireOrUnlock(LockDurations.FOR_EVER_NANOS, null, true);
    }

    @Override
    public boolean tryLock() {
        if (!local.tryLock()) {
            return false;
        }
        try {
            return acquireOrUnlock(0, null, false);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        return tryLockWithin(LockDurations.toNanos(Math.max(time, 0), unit), null);
    }

    /**
     * Takes the lock with a fixed lease of {@code ttl} if it is free within {@code waitTime}.
     *
     * @throws IllegalArgumentException when {@code ttl} is below 1 ms
     */
    @Override
    public boolean tryLock(Duration waitTime, Duration ttl) throws InterruptedException {
        return tryLockWithin(Math.max(LockDurations.toNanos(waitTime), 0), checkedTtl(ttl, "tryLock(waitTime, ttl)"));
    }

    private boolean tryLockWithin(long waitNanos, @Nullable Duration ttl) throws InterruptedException {
        long deadline = System.nanoTime() + waitNanos;
        if (!local.tryLock(waitNanos, TimeUnit.NANOSECONDS)) {
            return false;
        }
        return acquireOrUnlock(Math.max(deadline - System.nanoTime(), 0), ttl, true);
    }

    /** The backend part of an acquisition whose local part is done: undone locally when it fails or throws. */
    private boolean acquireOrUnlock(long waitNanos, @Nullable Duration ttl, boolean interruptible)
            throws InterruptedException {
        boolean acquired = false;
        try {
            acquired = backendAcquire(waitNanos, ttl, interruptible);
            return acquired;
        }
        finally {
            if (!acquired) {
                local.unlock();
            }
        }
    }

    /**
     * Makes sure the owner thread (which holds {@link #local}) holds the key in the backend: a re-entry whose hold is
     * still there keeps it; otherwise the key is taken within {@code waitNanos}.
     */
    private boolean backendAcquire(long waitNanos, @Nullable Duration ttl, boolean interruptible)
            throws InterruptedException {
        lastUsed = System.currentTimeMillis();
        HeldLock hold = held;
        if (hold != null) {
            if (hold.stillHeld()) {
                return true;
            }
            // lost: give back what is left (touches nothing of another owner) and take it anew below, for the
            // outermost hold (a nested unlock must not leave the outer hold without a backend lock), and remember the
            // loss for the outermost unlock to report
            lostAtDepth = heldAtDepth;
            lossSeen = true;
            held = null;
            hold.releaseAsync();
        }
        // distlock refuses waits between 0 and 1 ms (backends count whole milliseconds): what is left of a wait rounds up
        Duration wait = (waitNanos <= 0) ? Duration.ZERO : Duration.ofNanos(Math.max(waitNanos,
                LockDurations.ONE_MILLI_NANOS));
        LockOptions call = options.withWaitTime(wait)
                .withLeaseTime((ttl != null) ? ttl : LockOptions.WATCHDOG);
        CompletableFuture<HeldLock> acquisition = template.acquireAsync(List.of(key), call);
        HeldLock taken;
        try {
            taken = interruptible ? acquisition.get() : acquisition.join();
        }
        catch (InterruptedException ex) {
            // cancelling gives back whatever the backend still grants; a grant that completed as the interrupt came
            // is not given back by a cancellation (it is the caller's): give it back here, or nobody ever would
            if (!acquisition.cancel(false) && acquisition.isDone() && !acquisition.isCompletedExceptionally()) {
                acquisition.join().releaseAsync();
            }
            throw ex;
        }
        catch (ExecutionException | CompletionException ex) {
            Throwable cause = (ex.getCause() != null) ? ex.getCause() : ex;
            if (cause instanceof LockAcquisitionException) {
                return false;
            }
            if (cause instanceof RuntimeException runtime) {
                throw runtime;
            }
            if (cause instanceof Error error) {
                throw error;
            }
            throw new IllegalStateException("Could not acquire '" + fullKey + "'", cause);
        }
        held = taken;
        heldAtDepth = lossSeen ? lostAtDepth : local.getHoldCount();
        fixedLease = ttl != null;
        return true;
    }

    /**
     * Ends one hold of the calling thread; the last one (or the one that took the backend lock anew after a loss)
     * releases the backend lock.
     *
     * @throws IllegalMonitorStateException when the calling thread does not hold the lock
     * @throws IllegalStateException when the backend had reported the lock lost while it was held: the work it
     * guarded may have run beside another holder (the local hold is ended all the same)
     */
    @Override
    public void unlock() {
        if (!local.isHeldByCurrentThread()) {
            throw new IllegalMonitorStateException("The current thread does not hold the lock '" + fullKey
                    + "': a lock of a LockRegistry is released by the thread that took it");
        }
        HeldLock hold = held;
        boolean lost = false;
        try {
            if (hold != null && local.getHoldCount() <= heldAtDepth) {
                held = null;
                lost = hold.lostWhileHeld();
                hold.releaseAsync().join();
                // a loss found by the release itself (a lease overdue when it was given back) is known now
                lost |= hold.lostWhileHeld();
            }
            if (local.getHoldCount() == 1) {
                lost |= lossSeen;
                lossSeen = false;
            }
        }
        finally {
            local.unlock();
            lastUsed = System.currentTimeMillis();
        }
        if (lost) {
            throw new IllegalStateException("The lock '" + fullKey + "' was lost while held (its lease ran out or "
                    + "renewal failed): the work it guarded may have run beside another holder");
        }
    }

    /** Not supported: a condition would need a distributed wait set. */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("Conditions are not supported by distlock's LockRegistry locks");
    }

    /** Whether some thread of this process holds the lock (for the registry's clean-up). */
    boolean isLocked() {
        return local.isLocked();
    }

    /**
     * {@link org.springframework.integration.support.locks.RenewableLockRegistry#renewLock(Object)}: checks that the
     * calling thread still holds the lock in the backend; the watchdog does the renewing.
     */
    void checkRenewable() {
        if (!local.isHeldByCurrentThread()) {
            throw new IllegalMonitorStateException("The current thread does not hold the lock '" + fullKey
                    + "', so it can't renew it");
        }
        HeldLock hold = held;
        if (hold == null || !hold.stillHeld()) {
            throw new IllegalStateException("The lock '" + fullKey + "' is no longer held in the backend (its lease "
                    + "ran out or renewal failed)");
        }
        if (fixedLease) {
            throw new UnsupportedOperationException("The lock '" + fullKey + "' was taken with a fixed ttl, which "
                    + "distlock can't extend; take it without a ttl to have it renewed by the watchdog while held");
        }
    }

    private static Duration checkedTtl(Duration ttl, String method) {
        if (ttl == null || ttl.compareTo(Duration.ofMillis(1)) < 0) {
            throw new IllegalArgumentException(DistlockLock.class.getSimpleName() + "." + method
                    + ": ttl must be at least 1 ms, was " + ttl);
        }
        return ttl;
    }

    @Override
    public String toString() {
        return "DistlockLock[" + fullKey + (local.isLocked() ? ", locked" : "") + "]";
    }
}

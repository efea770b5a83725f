package io.github.distlock.redisson;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.github.distlock.LockKeyClosedException;
import org.redisson.api.RScript;

/**
 * One acquisition waiting in the queue of a {@code FAIR} lock ({@link HandoffLocks}: its keys and invariants). Completes
 * once ({@link #done}); whichever of grant message, poll, close or give-up takes {@code done} first decides, and a
 * give-up always runs the release script, which passes on a grant that arrived meanwhile.
 */
final class HandoffWaiter {

    /**
     * How often a waiter tries its first script again after a timeout or a lost connection (scripts are not re-sent by
     * Redisson, see {@link HandoffScriptRunner#eval}): as often as Redisson re-sends a command by default.
     */
    private static final int FIRST_SCRIPT_RETRIES = 4;

    private final HandoffLocks locks;

    final String key;
    final long owner;
    final String field;
    final long leaseMillis;
    final long deadline;
    final boolean waits;
    final CompletableFuture<HandoffLocks.Granted> result = new CompletableFuture<>();
    final AtomicBoolean done = new AtomicBoolean();
    private volatile ScheduledFuture<?> poll;
    /** Redis's clock minus this JVM's nanoTime, in ns, from the last queueing reply; its uncertainty in ns. */
    private volatile long clockOffset;
    private volatile long clockError = Long.MAX_VALUE;
    /**
     * The key's close count read by this waiter's last queueing script ({@link Long#MAX_VALUE} while unknown: none
     * answered yet, or one whose answer was lost — it may have queued this waiter after any close).
     */
    private volatile long queuedAfterCloses = Long.MAX_VALUE;
    /**
     * Set when the caller is done with the lock it was handed (see {@link #letGo()}); completed once its release has
     * answered.
     */
    private volatile CompletableFuture<Void> letGo;
    /**
     * A script of this waiter may have done something nobody accounts for: its answer was lost (it may run yet),
     * or it came after the waiter was answered. Whatever it did is given back once the caller is done: see
     * {@link #lateScript}.
     */
    volatile boolean unsettled;
    /**
     * A script of this waiter failed: it may be carried out yet, at any time. Its give-back buries the waiter
     * ({@link HandoffScripts#BURY}) rather than only releasing, so that it does nothing then. Written before {@link #unsettled}.
     */
    private volatile boolean mayRunYet;

    HandoffWaiter(HandoffLocks locks, String key, long owner, String field, long leaseMillis, long deadline,
            boolean waits) {
        this.locks = locks;
        this.key = key;
        this.owner = owner;
        this.field = field;
        this.leaseMillis = leaseMillis;
        this.deadline = deadline;
        this.waits = waits;
    }

    /** Runs the acquisition script: queueing (and refreshing the entry) or, with {@code queue} false, a last try. */
    void attempt(boolean queue) {
        if (done.get()) {
            return;
        }
        long sent = System.nanoTime();
        CompletableFuture<List<Object>> reply;
        try {
            reply = locks.<List<Object>>eval(key, HandoffScripts.ACQUIRE, RScript.ReturnType.LIST,
                    HandoffLocks.keys(key, field), field, String.valueOf(leaseMillis), queue ? "1" : "0",
                    String.valueOf(locks.entryTtlMillis), String.valueOf(locks.grantMillis),
                    HandoffLocks.CHANNEL_PREFIX, key);
        }
        catch (RuntimeException ex) {
            fail(ex);
            return;
        }
        reply.whenComplete((answer, failure) -> {
            try {
                if (failure != null) {
                    failed(queue, failure);
                }
                else {
                    answered(queue, answer, sent, System.nanoTime());
                }
            }
            catch (Throwable unexpected) {
                fail(unexpected);
            }
        });
    }

    private void answered(boolean queue, List<Object> answer, long sent, long received) {
        long code = Long.parseLong(answer.get(0).toString());
        if (code == 1) {
            finish(HandoffLocks.Granted.FULL);
            return;
        }
        if (code == HandoffScripts.CLOSED) {
            // the script took the entry out itself: nothing to leave
            closeAnswered(answer.get(1).toString());
            return;
        }
        if (code == HandoffScripts.BURIED) {
            // a script of a waiter that was buried (answered, its caller done): it did nothing. Defensive: a waiter
            // is buried only once answered
            if (done.compareAndSet(false, true)) {
                cancelPoll();
                locks.waiting.remove(owner);
                result.complete(null);
            }
            return;
        }
        if (queue) {
            // Invariant (with closed()): every "queued" answer records the close count its script read BEFORE it
            // reads done, and closed() completes the result BEFORE it reads the count. So when a close and this
            // answer race, either the close sees this count (and leaves if the script ran after it), or this
            // answer sees the close's result complete (gaveUp) and leaves itself.
            queuedAfterCloses = closesRead(answer);
        }
        if (done.get()) {
            // answered meanwhile (grant, close, give-up, deadline): a queueing script that ran after the caller was
            // done with the lock queued a ghost
            if (queue) {
                lateScript();
            }
        }
        else if (!queue || System.nanoTime() - deadline >= 0) {
            // a last try that failed: the script has taken this waiter out of the queue
            if (done.compareAndSet(false, true)) {
                locks.waiting.remove(owner);
                if (queue) {
                    // queued after all (the deadline passed while the queueing reply was on its way): leave
                    leaveQuietly();
                }
                result.complete(null);
            }
            else if (queue) {
                lateScript();
            }
        }
        else {
            long redisNow = Long.parseLong(answer.get(2).toString());
            if (redisNow > 0) {
                // the reply's Redis time was read between sent and received: the midpoint is off by half the trip
                clockOffset = redisNow * 1_000_000 - (sent + (received - sent) / 2);
                clockError = (received - sent) / 2 + 1_000_000;
            }
            // a close that takes done from here on reads the count written above
            polled = true;
            schedulePoll();
        }
    }

    /** The close count a queueing script read; unknown ({@link Long#MAX_VALUE}) when it found none or sent none. */
    private static long closesRead(List<Object> answer) {
        long closes = (answer.size() > 3) ? Long.parseLong(answer.get(3).toString()) : -1;
        return (closes < 0) ? Long.MAX_VALUE : closes;
    }

    /**
     * A command failed. A waiter that waits tries its first script again after a timeout or a lost connection (at
     * most {@link #FIRST_SCRIPT_RETRIES} times), and once queued polls on after any failure until its deadline
     * (Redis may come back, say after a restart that lost the queue: the next poll queues again); a failed last
     * try, another error of the first script, or any failure of a single try fails it. Either way the script may
     * have run, or run yet: see {@link #unsettled}.
     */
    private void failed(boolean queue, Throwable failure) {
        // the script may run yet, even after the caller got the lock another way and released it (a poll whose
        // connection broke with it on its way): given back once the caller is done. Written before done is read
        mayRunYet = true;
        unsettled = true;
        if (queue) {
            // the script may have run, and queued this waiter after a close: a close must not count on its entry
            // being gone. Written before done is read, as in answered()
            queuedAfterCloses = Long.MAX_VALUE;
        }
        if (done.get()) {
            // a script whose answer is lost may run yet, after the caller is done with the lock
            lateScript();
            return;
        }
        // a first script that timed out or lost its connection is not re-sent by Redisson (see eval): the waiter
        // tries again itself, as often as Redisson would have re-sent it, then fails as a REENTRANT call does once
        // Redisson's retries are spent; another error fails the call at once. Once queued, it polls on until its
        // deadline (Redis may come back with the queue lost: the next poll queues again)
        if (queue && System.nanoTime() - deadline < 0
                && (polled || (transientFailure(failure) && ++firstScriptRetries <= FIRST_SCRIPT_RETRIES))) {
            schedulePoll();
            return;
        }
        fail(failure);
    }

    /** Whether a queueing script of this waiter was answered: from then on, a failed poll does not fail it. */
    private volatile boolean polled;
    /** Transient failures of the first script tried again; one attempt is on its way at a time. */
    private int firstScriptRetries;

    private static boolean transientFailure(Throwable failure) {
        Throwable cause = (failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null)
                ? failure.getCause() : failure;
        return cause instanceof org.redisson.client.RedisTimeoutException
                || cause instanceof org.redisson.client.RedisConnectionException;
    }

    private void schedulePoll() {
        long remaining = deadline - System.nanoTime();
        long delay = Math.min(Math.max(remaining, 0), TimeUnit.MILLISECONDS.toNanos(locks.entryTtlMillis / 3));
        try {
            poll = locks.timer.schedule(() -> attempt(deadline - System.nanoTime() > 0), delay, TimeUnit.NANOSECONDS);
        }
        catch (RuntimeException rejected) {
            fail(rejected);
            return;
        }
        if (done.get()) {
            poll.cancel(false);
        }
    }

    /**
     * The release of the previous holder made this waiter the owner, with a lease of {@code ttl} ms from Redis's
     * {@code grantedAt}. When that lease is shorter than the holder's own, a claim extends it — not waited for when
     * at least half the grant is left by this JVM's clock (so the claim has half the grant to arrive), waited for
     * otherwise (a message that sat in a paused JVM): a holder is never handed a lock about to expire under it.
     */
    void granted(long ttl, long grantedAt) {
        if (!done.compareAndSet(false, true)) {
            return;
        }
        cancelPoll();
        locks.waiting.remove(owner);
        long error = clockError;
        long now = System.nanoTime();
        long grantedLocally = grantedAt * 1_000_000 - clockOffset;
        long elapsed = (error == Long.MAX_VALUE) ? Long.MAX_VALUE : now - grantedLocally + error;
        // on a replicated Redis the grant was published before the releaser's WAIT: confirm it, synced, first
        if (!locks.synced() && elapsed < TimeUnit.MILLISECONDS.toNanos(ttl) / 2) {
            if (ttl >= leaseMillis) {
                hand(HandoffLocks.Granted.FULL);
                return;
            }
            long claimBy = grantedLocally - error + TimeUnit.MILLISECONDS.toNanos(ttl);
            hand(new HandoffLocks.Granted((claimBy == 0) ? 1 : claimBy));
            return;
        }
        // an old grant (a message that sat in a paused JVM), whatever its lease: handed out only once Redis
        // confirms it is still this waiter's, with the holder's whole lease
        locks.renew(key, field, leaseMillis).whenComplete((held, failure) -> {
            if (failure != null) {
                leaveQuietly();
                result.completeExceptionally(failure);
            }
            else if (held) {
                hand(HandoffLocks.Granted.FULL);
            }
            else {
                // the grant ran out before this JVM got to it: the next waiter has it (or will); queue again,
                // unless the caller stopped waiting meanwhile (its give-up found this waiter done, and left it)
                locks.waiting.put(owner, this);
                done.set(false);
                if (result.isDone()) {
                    abandon();
                }
                else {
                    attempt(System.nanoTime() - deadline < 0);
                }
            }
        });
    }

    /**
     * The key was closed by its {@code number}th close, which took this waiter's entry out of the queue
     * ({@code number} 0: a close that says neither, or the waiter's own script that found the key closed and took
     * the entry out itself — see the callers). Nothing is left to take out, unless this waiter queued again since
     * (a reopen, and a poll whose script ran after it, read that close's number or a later one): only then it
     * leaves — not one script per waiter on every close.
     */
    void closed(String reason, long number) {
        if (done.compareAndSet(false, true)) {
            cancelPoll();
            locks.waiting.remove(owner);
            result.completeExceptionally(new LockKeyClosedException(key, reason));
            // read after the result is complete: a queueing reply (or failure) being handled now either wrote
            // queuedAfterCloses before this read, or reads done (and finds the result complete) after it, and
            // leaves itself
            if (number == 0 || queuedAfterCloses >= number) {
                leaveQuietly();
            }
        }
    }

    /** This waiter's own script found the key closed and took its entry out. */
    private void closeAnswered(String reason) {
        if (done.compareAndSet(false, true)) {
            cancelPoll();
            locks.waiting.remove(owner);
            result.completeExceptionally(new LockKeyClosedException(key, reason));
        }
    }

    private void finish(HandoffLocks.Granted granted) {
        if (done.compareAndSet(false, true)) {
            cancelPoll();
            locks.waiting.remove(owner);
            hand(granted);
        }
        else {
            // a script still on its way took the lock after the waiter was answered: after a give-up, failure,
            // close or deadline, or after a grant whose caller may have released the lock since
            lateScript();
        }
    }

    /**
     * Hands the lock to the caller; a caller that stopped waiting meanwhile (cancelled: its give-up found this waiter
     * done and did nothing) gets nothing, so the lock is given back here.
     */
    private void hand(HandoffLocks.Granted granted) {
        if (!result.complete(granted)) {
            leaveQuietly();
        }
    }

    /** Whether the caller has its answer and it is not the lock: cancelled, failed, or not acquired. */
    boolean gaveUp() {
        return result.isCancelled() || result.isCompletedExceptionally()
                || (result.isDone() && result.getNow(HandoffLocks.Granted.FULL) == null);
    }

    void fail(Throwable failure) {
        if (done.compareAndSet(false, true)) {
            cancelPoll();
            locks.waiting.remove(owner);
            // the script may have run after the client gave up on it, or run yet: release or leave (and bury),
            // until Redis answers
            leaveQuietly();
            result.completeExceptionally(failure);
        }
        else {
            lateScript();
        }
    }

    /**
     * A script of this waiter ran (its answer is here) or may run yet (its answer was lost) after the waiter was
     * answered, and may have taken the lock, or queued the waiter again, for an acquisition its caller
     * is done with (seen in the FAIR contract fuzz: a poll sent before the grant message arrived waited for a
     * pooled connection and ran after the caller's release, on another connection, took the free lock for its whole
     * lease, and nobody held it). Whatever it did is given back once the caller is done: at once if the caller gave
     * up; after the caller's release has answered if it was handed the lock (not before: the give-back would race
     * that release and make it answer "not held"), or at once if it was not handed out after all (no release
     * comes). {@link #unsettled} is written before {@link #letGo} is read here, and the reverse in
     * {@link #letGo()}: at least one side sees the other; both giving back is harmless. The same flag, set by
     * {@link #failed} for a script whose answer was lost before the waiter was answered, makes the caller's let-go
     * or give-up give back too (see {@link HandoffLocks#acquire}).
     */
    private void lateScript() {
        unsettled = true;
        result.whenComplete((ignored, failure) -> {
            if (gaveUp()) {
                leaveQuietly();
                return;
            }
            CompletableFuture<Void> released = letGo;
            if (released != null) {
                released.whenComplete((answered, ignoredFailure) -> leaveQuietly());
            }
        });
    }

    /**
     * The caller is done with the lock this waiter was handed: its release is about to be sent, or the provider did
     * not hand the lock out after all. Called before that release is sent (see {@link #lateScript}); the caller
     * completes the future returned once its release has answered (at once when there is none).
     */
    CompletableFuture<Void> letGo() {
        CompletableFuture<Void> released = new CompletableFuture<>();
        letGo = released;
        if (unsettled) {
            released.whenComplete((answered, failure) -> leaveQuietly());
        }
        return released;
    }

    /** The caller stopped waiting: leave the queue, or pass on the lock if it was granted meanwhile. */
    void abandon() {
        if (done.compareAndSet(false, true)) {
            cancelPoll();
            locks.waiting.remove(owner);
            leaveQuietly();
        }
    }

    /**
     * Releases what this waiter may hold, or takes it out of the queue, until Redis answers; a waiter with a script
     * that may run yet is buried as well (one answer is then enough, see {@link HandoffScripts#BURY}).
     */
    void leaveQuietly() {
        if (mayRunYet) {
            locks.giveBacks.giveBack(key, () -> locks.bury(key, field), leaseMillis);
        }
        else {
            locks.giveBacks.giveBack(key, () -> locks.release(key, field), leaseMillis);
        }
    }

    private void cancelPoll() {
        ScheduledFuture<?> scheduled = poll;
        if (scheduled != null) {
            scheduled.cancel(false);
        }
    }
}

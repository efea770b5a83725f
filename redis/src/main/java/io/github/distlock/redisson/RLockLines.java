package io.github.distlock.redisson;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import io.github.distlock.spi.LockDurations;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.redisson.RedissonObject;
import org.redisson.RedissonShardedTopic;
import org.redisson.RedissonTopic;
import org.redisson.api.RTopic;
import org.redisson.client.codec.LongCodec;
import org.redisson.command.CommandAsyncExecutor;

/**
 * This instance's {@code REENTRANT} waiters, one line per key in arrival order: only the first of a line sends tries;
 * the others wait for their turn without touching Redis. The first is woken by Redisson's unlock message on the key's
 * lock channel (every release of the key sends one, whoever released it), at the holder's time to live, and, while the
 * line has no subscription in place (being made, or failed and asked for again), at least every {@code pollMillis}.
 * With a subscription it tries no more often than Redisson's own wait would, so that an outage fails no waiter that
 * Redisson's wait would have carried through; a release whose message was lost (a reconnect, a key deleted behind the
 * lock's back) is then found at the holder's time to live, as with Redisson's wait.
 * So an unlock message costs this instance one try, as in Redisson's own blocking wait, where Redisson's asynchronous
 * wait — the only one that takes an owner id — costs about two: its channel listener runs a waiting listener and also
 * leaves a permit that a later waiter finds, and tries again for nothing. The lock stays Redisson's: the same hash,
 * script and release, and every try asks Redis; the line only decides who of this instance asks next.
 *
 * <p>A caller tries at once when nobody of this instance waits for the key, and gets a place in a line only when that
 * try finds the key held: an uncontended acquisition costs no line. A caller behind others whose wait runs out before
 * it ever tried leaves the line and tries once on its own: every caller asks Redis at least once, as before.
 *
 * <p>Invariants (each line's state is guarded by its monitor):
 * <ol>
 * <li>At most one try of a line is on its way ({@code trying}); only the line's first waiter sends one.</li>
 * <li>A message that arrives while a try is on its way may tell of a release the try did not see (the try ran first):
 * it is remembered ({@code releasedMeanwhile}), and a try that then finds the lock held is sent again at once. A message
 * that arrives before a try is sent is no news to it (Redis ran that release before the try), so the mark is cleared
 * when a try is sent. A subscription that completes while a try is on its way counts as such a message: a release
 * between the try and the subscription was heard by nobody.</li>
 * <li>While a line has waiters and no try on its way, a wake is scheduled (the holder's time to live; capped at
 * {@code pollMillis} while no subscription is in place) unless the first's deadline comes sooner (its deadline timer stands in, and when it leaves the
 * next tries at once), and the subscription is asked for; when the subscription is in place the first tries again.</li>
 * <li>A waiter completes once ({@code done}): its try's reply, its deadline, a cancellation or the provider closing.
 * A try on its way for a waiter that is done still decides: acquired, the lock is given back by the caller's code
 * ({@link RLockKind}), which finds the result already completed; failed, the same code gives back what it may have
 * taken.</li>
 * <li>The line leaves the map once it has no waiter and no try on its way; the next waiter of the key starts a new
 * one. Map operations never run under a line's monitor, and no callback of a caller runs under it.</li>
 * </ol>
 */
final class RLockLines {

    private static final Log logger = LogFactory.getLog(RedissonLockProvider.class);

    /** How long a line waits before asking for its subscription again after it failed. */
    private static final long RESUBSCRIBE_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** What becomes of a waiter: its try's reply, or {@code false} when its wait ran out. */
    @FunctionalInterface
    interface Outcome {
        void settle(Boolean acquired, Throwable failure);
    }

    private final ConcurrentHashMap<String, Line> lines = new ConcurrentHashMap<>();
    private final CommandAsyncExecutor executor;
    private final ScheduledExecutorService timer;
    /** Whether Redisson wakes waiters with sharded pub/sub ({@code SPUBLISH}): the channel must be subscribed alike. */
    private final boolean sharded;
    private final long pollNanos;
    private volatile boolean closed;

    /**
     * @param publishCommand the command Redisson's releases wake waiters with
     * @param pollMillis the longest a first waiter goes without a try while its line has no subscription in place (a
     * third of the watchdog timeout)
     */
    RLockLines(CommandAsyncExecutor executor, ScheduledExecutorService timer, String publishCommand, long pollMillis) {
        this.executor = executor;
        this.timer = timer;
        this.sharded = "spublish".equalsIgnoreCase(publishCommand);
        this.pollNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(1, pollMillis));
    }

    /** A caller waiting for a key of a line. */
    private static final class Waiter {
        final OwnedRLock lock;
        final long owner;
        final long leaseMillis;
        final long deadline;
        final boolean forEver;
        final Outcome outcome;
        final CompletableFuture<?> result;
        /** Completed (see invariant 4). Guarded by the line, as the fields below. */
        boolean done;
        /** A try of it was sent: it asked Redis at least once. */
        boolean tried;
        ScheduledFuture<?> deadlineTimer;

        Waiter(OwnedRLock lock, long owner, long leaseMillis, long waitNanos, long deadline, Outcome outcome,
                CompletableFuture<?> result) {
            this.lock = lock;
            this.owner = owner;
            this.leaseMillis = leaseMillis;
            this.forEver = waitNanos >= LockDurations.FOR_EVER_NANOS;
            this.deadline = deadline;
            this.outcome = outcome;
            this.result = result;
        }

        long remainingNanos() {
            return forEver ? Long.MAX_VALUE : LockDurations.remaining(deadline, System.nanoTime());
        }
    }

    /** One key's line. */
    private final class Line {
        final String key;
        /** Redisson's lock channel of the key, as its releases name it (the key after Redisson's name mapper). */
        final String channel;
        final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
        /** The waiter whose try is on its way, or {@code null}. */
        Waiter trying;
        /** An unlock message arrived while {@link #trying}'s try was on its way (invariant 2). */
        boolean releasedMeanwhile;
        /** Wakes whoever is first: at the holder's time to live, at the latest after a poll period. */
        ScheduledFuture<?> wake;
        /** The lock channel's listener id, once asked for; {@code null} before, and after it failed. */
        CompletableFuture<Integer> subscription;
        RTopic topic;
        /** Out of the map: nothing joins it any more. */
        boolean removed;

        Line(String key, OwnedRLock lock) {
            this.key = key;
            this.channel = RedissonObject.prefixName("redisson_lock__channel", lock.getRawName());
        }
    }

    /**
     * Takes {@code lock} for a caller that waits up to {@code waitNanos} (more than 0); {@code outcome} is told once,
     * unless {@code result} is cancelled first (then the caller leaves the line).
     */
    void acquire(OwnedRLock lock, long owner, long leaseMillis, long waitNanos, CompletableFuture<?> result,
            Outcome outcome) {
        if (closed) {
            throw new IllegalStateException("The Redis lock provider is closed: lock '" + lock.getName()
                    + "' would not be renewed nor watched");
        }
        Waiter waiter = new Waiter(lock, owner, leaseMillis, waitNanos,
                LockDurations.deadline(System.nanoTime(), waitNanos), outcome, result);
        if (lines.containsKey(lock.getName())) {
            join(waiter, -1);
            return;
        }
        waiter.tried = true;
        tryOnce(waiter).whenComplete((ttl, failure) -> {
            if (failure != null || ttl == null) {
                outcome.settle((failure == null) ? Boolean.TRUE : null, failure);
                return;
            }
            if (result.isDone()) {
                // cancelled while the try was on its way, and it took nothing
                return;
            }
            if (waiter.remainingNanos() <= 0) {
                outcome.settle(Boolean.FALSE, null);
                return;
            }
            join(waiter, ttl);
        });
    }

    private static CompletableFuture<Long> tryOnce(Waiter waiter) {
        return tryOnce(waiter.lock, waiter.leaseMillis, waiter.owner);
    }

    /** {@link OwnedRLock#tryOnce}, a client that throws at once (shutting down) answered as a failed try. */
    static CompletableFuture<Long> tryOnce(OwnedRLock lock, long leaseMillis, long owner) {
        try {
            return lock.tryOnce(leaseMillis, owner);
        }
        catch (RuntimeException shutDown) {
            return CompletableFuture.failedFuture(shutDown);
        }
    }

    /**
     * Puts {@code waiter} at the end of its key's line. {@code ttl}: the holder's time to live its first try found, or
     * {@code -1} when it has not tried yet.
     */
    private void join(Waiter waiter, long ttl) {
        boolean[] first = new boolean[1];
        Line line = lines.compute(waiter.lock.getName(), (k, existing) -> {
            Line joined = (existing != null) ? existing : new Line(k, waiter.lock);
            synchronized (joined) {
                joined.waiters.addLast(waiter);
                first[0] = joined.waiters.peekFirst() == waiter && joined.trying == null;
            }
            return joined;
        });
        if (closed) {
            // closed while it joined: shutdown() may have passed this line already
            stop(line, waiter, closedWhileWaiting(waiter));
            return;
        }
        waiter.result.whenComplete((ignored, failure) -> {
            if (waiter.result.isCancelled()) {
                stop(line, waiter, null);
            }
        });
        boolean tryNow;
        synchronized (line) {
            // first, and either it has not tried yet or the line heard releases already: a release between its try
            // and joining was heard while nobody was first, so it tries again now. On a line still subscribing, the
            // subscription's completion makes it try (invariant 3)
            tryNow = first[0] && (ttl < 0 || (line.subscription != null && line.subscription.isDone()));
            if (!tryNow && !waiter.done) {
                // it will wait: for releases, the holder's time to live and its deadline
                scheduleDeadline(line, waiter);
                if (first[0]) {
                    wakeAt(line, ttl, waiter.remainingNanos());
                }
            }
        }
        if (tryNow) {
            sendTry(line, waiter);
            return;
        }
        subscribe(line);
    }

    /** Sends {@code waiter}'s try, unless it is done, not first, or another try of the line is on its way. */
    private void sendTry(Line line, Waiter waiter) {
        synchronized (line) {
            if (waiter.done || line.trying != null || line.waiters.peekFirst() != waiter) {
                return;
            }
            line.trying = waiter;
            waiter.tried = true;
            line.releasedMeanwhile = false;
            cancel(line.wake);
            line.wake = null;
        }
        CompletableFuture<Long> reply = tryOnce(waiter);
        if (reply.isDone()) {
            // answered at once (a client shutting down): off this stack, which would otherwise grow by one try per
            // waiter of the line
            try {
                timer.execute(() -> reply.whenComplete((ttl, failure) -> replied(line, waiter, ttl, failure)));
                return;
            }
            catch (RejectedExecutionException closing) {
                // the provider is closing: answer here
            }
        }
        reply.whenComplete((ttl, failure) -> replied(line, waiter, ttl, failure));
    }

    private void replied(Line line, Waiter waiter, Long ttl, Throwable failure) {
        Boolean acquired = null;
        Waiter next = null;
        boolean settle = false;
        boolean retry = false;
        boolean subscribe = false;
        synchronized (line) {
            line.trying = null;
            Waiter first;
            if (failure != null || ttl == null) {
                // decides even for a waiter that is done: see invariant 4
                line.waiters.remove(waiter);
                cancel(waiter.deadlineTimer);
                settle = true;
                waiter.done = true;
                acquired = (failure == null) ? Boolean.TRUE : null;
                first = line.waiters.peekFirst();
                if (first != null) {
                    if (failure == null) {
                        // this instance holds the key now: its release's message wakes the next, or the lease it just
                        // took runs out (a holder whose work outlasts a fixed lease releases nothing), or the poll
                        line.releasedMeanwhile = false;
                        wakeAt(line, waiter.leaseMillis, first.remainingNanos());
                    }
                    else {
                        // after a failure nobody knows the key's state: the next tries
                        next = first;
                    }
                }
            }
            else {
                if (waiter.done) {
                    // cancelled, or the provider closed, while its try was on its way: the next takes over
                    line.waiters.remove(waiter);
                }
                else if (waiter.remainingNanos() <= 0) {
                    line.waiters.remove(waiter);
                    cancel(waiter.deadlineTimer);
                    waiter.done = true;
                    settle = true;
                    acquired = Boolean.FALSE;
                }
                first = line.waiters.peekFirst();
                if (first != null) {
                    if (line.releasedMeanwhile) {
                        if (first == waiter) {
                            retry = true;
                        }
                        else {
                            next = first;
                        }
                    }
                    else {
                        scheduleDeadline(line, first);
                        wakeAt(line, ttl, first.remainingNanos());
                        subscribe = line.subscription == null;
                    }
                }
            }
            if (closed) {
                retry = false;
                next = null;
            }
        }
        if (retry) {
            sendTry(line, waiter);
        }
        if (next != null) {
            sendTry(line, next);
        }
        if (settle) {
            waiter.outcome.settle(acquired, failure);
        }
        if (subscribe) {
            subscribe(line);
        }
        removeIfIdle(line);
    }

    /**
     * Subscribes the line's lock channel once; when the subscription is in place, the first waiter tries again
     * (invariant 2 and 3). A failed subscription is asked for again a second later while the line lives.
     */
    private void subscribe(Line line) {
        CompletableFuture<Integer> subscription;
        synchronized (line) {
            if (line.subscription != null || line.removed || closed) {
                return;
            }
            line.topic = sharded ? RedissonShardedTopic.createRaw(LongCodec.INSTANCE, executor, line.channel)
                    : RedissonTopic.createRaw(LongCodec.INSTANCE, executor, line.channel);
            try {
                subscription = line.topic.addListenerAsync(Long.class, (ch, message) -> released(line))
                        .toCompletableFuture();
            }
            catch (RuntimeException shutDown) {
                subscription = CompletableFuture.failedFuture(shutDown);
            }
            line.subscription = subscription;
        }
        CompletableFuture<Integer> asked = subscription;
        asked.whenComplete((id, failure) -> {
            if (failure != null) {
                logger.debug("Could not subscribe to the unlock messages of '" + line.key + "'; its waiters try again "
                        + "at the holder's time to live or the next poll, and the subscription is asked for again",
                        failure);
                synchronized (line) {
                    if (line.subscription == asked) {
                        line.subscription = null;
                    }
                }
                schedule(() -> {
                    boolean waiting;
                    synchronized (line) {
                        waiting = !line.waiters.isEmpty();
                    }
                    if (waiting) {
                        subscribe(line);
                    }
                }, RESUBSCRIBE_NANOS);
                return;
            }
            released(line);
        });
    }

    /** An unlock message on the line's channel: the first waiter tries, or will try again (invariant 2). */
    private void released(Line line) {
        wake(line, true);
    }

    /** The line's wake timer: the first tries, unless a try is on its way (a timer is no news of a release). */
    private void woken(Line line) {
        wake(line, false);
    }

    private void wake(Line line, boolean message) {
        Waiter first;
        synchronized (line) {
            if (line.trying != null) {
                line.releasedMeanwhile |= message;
                return;
            }
            first = line.waiters.peekFirst();
        }
        if (first != null) {
            sendTry(line, first);
        }
    }

    /**
     * Wakes whoever is first then, after the holder's time to live {@code ttl} ms ({@code -1}: unknown), at the latest
     * after a poll period; not at all when the first's own deadline comes sooner (its deadline timer answers it).
     */
    private void wakeAt(Line line, long ttl, long firstRemainingNanos) {
        cancel(line.wake);
        line.wake = null;
        // polls only while no subscription is in place: with one, a waiter tries no more often than Redisson's own
        // (a poll that fails during a failover would fail a waiter that Redisson's wait would have carried through it)
        CompletableFuture<Integer> subscription = line.subscription;
        long cap = (subscription != null && subscription.isDone() && !subscription.isCompletedExceptionally())
                ? Long.MAX_VALUE : pollNanos;
        long delay = (ttl < 0) ? cap : Math.min(TimeUnit.MILLISECONDS.toNanos(Math.max(1, ttl)), cap);
        if (delay < firstRemainingNanos) {
            line.wake = schedule(() -> woken(line), delay);
        }
    }

    private void scheduleDeadline(Line line, Waiter waiter) {
        if (waiter.deadlineTimer != null || waiter.forEver) {
            return;
        }
        waiter.deadlineTimer = schedule(() -> deadlinePassed(line, waiter), waiter.remainingNanos());
    }

    /**
     * The waiter's wait ran out while it waited: it is answered "not acquired" — after one try of its own when it never
     * asked Redis (it waited behind others), so that every caller asks at least once.
     */
    private void deadlinePassed(Line line, Waiter waiter) {
        Waiter next = null;
        boolean tried;
        synchronized (line) {
            if (waiter.done || line.trying == waiter) {
                // its try on its way decides (see replied)
                return;
            }
            boolean wasFirst = line.waiters.peekFirst() == waiter;
            line.waiters.remove(waiter);
            waiter.done = true;
            tried = waiter.tried;
            next = wasFirst ? nextFirst(line) : null;
        }
        if (next != null) {
            sendTry(line, next);
        }
        removeIfIdle(line);
        if (tried) {
            // not on the provider's timer thread: the caller's continuations run where its future completes
            ForkJoinPool.commonPool().execute(() -> waiter.outcome.settle(Boolean.FALSE, null));
            return;
        }
        tryOnce(waiter).whenComplete((ttl, failure) ->
                waiter.outcome.settle((failure == null) ? Boolean.valueOf(ttl == null) : null, failure));
    }

    /**
     * Takes {@code waiter} out of its line: cancelled ({@code failure} {@code null}) or failed with {@code failure}.
     * A try of it on its way still decides (invariant 4).
     */
    private void stop(Line line, Waiter waiter, Throwable failure) {
        Waiter next = null;
        synchronized (line) {
            if (waiter.done) {
                return;
            }
            waiter.done = true;
            cancel(waiter.deadlineTimer);
            if (line.trying != waiter) {
                boolean wasFirst = line.waiters.peekFirst() == waiter;
                line.waiters.remove(waiter);
                if (wasFirst && !closed) {
                    next = nextFirst(line);
                }
            }
        }
        if (failure != null) {
            waiter.result.completeExceptionally(failure);
        }
        if (next != null) {
            sendTry(line, next);
        }
        removeIfIdle(line);
    }

    /**
     * The first waiter left without a try on its way: the line's wake (the holder's time to live or the poll) now wakes
     * the next; only when none is scheduled (it was not needed before the leaver's own deadline) does the next try at
     * once. Under the line's monitor.
     */
    private Waiter nextFirst(Line line) {
        return (line.wake == null) ? line.waiters.peekFirst() : null;
    }

    /** Takes the line out of the map once nobody waits in it and no try of it is on its way (invariant 5). */
    private void removeIfIdle(Line line) {
        boolean[] gone = new boolean[1];
        lines.computeIfPresent(line.key, (k, current) -> {
            if (current != line) {
                return current;
            }
            synchronized (line) {
                if (!line.waiters.isEmpty() || line.trying != null) {
                    return current;
                }
                line.removed = true;
                cancel(line.wake);
                line.wake = null;
                gone[0] = true;
                return null;
            }
        });
        if (gone[0]) {
            unsubscribe(line);
        }
    }

    private void unsubscribe(Line line) {
        CompletableFuture<Integer> subscription;
        RTopic topic;
        synchronized (line) {
            subscription = line.subscription;
            topic = line.topic;
        }
        if (subscription == null) {
            return;
        }
        subscription.thenAccept(id -> {
            try {
                topic.removeListenerAsync(id);
            }
            catch (RuntimeException shutDown) {
                // the client is shutting down: its subscriptions go with it
            }
        });
    }

    private ScheduledFuture<?> schedule(Runnable task, long delayNanos) {
        try {
            return timer.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
        }
        catch (RejectedExecutionException closing) {
            // the provider is closing: shutdown() answers every waiter
            return null;
        }
    }

    private static void cancel(ScheduledFuture<?> future) {
        if (future != null) {
            future.cancel(false);
        }
    }

    private static IllegalStateException closedWhileWaiting(Waiter waiter) {
        return new IllegalStateException("The lock provider was closed while waiting for '" + waiter.lock.getName()
                + "'");
    }

    /**
     * The provider is closing: every waiter is answered now, a waiter whose try is on its way too (its timers would
     * never run; a lock that try takes is given back, invariant 4), and the lines unsubscribed.
     */
    void shutdown() {
        closed = true;
        List<Line> all = new ArrayList<>(lines.values());
        for (Line line : all) {
            List<Waiter> waiting;
            synchronized (line) {
                waiting = new ArrayList<>(line.waiters);
            }
            for (Waiter waiter : waiting) {
                stop(line, waiter, closedWhileWaiting(waiter));
            }
        }
    }

    /** The waiters in {@code key}'s line once its subscription is confirmed: who a release would wake (for tests). */
    int waiting(String key) {
        Line line = lines.get(key);
        if (line == null) {
            return 0;
        }
        synchronized (line) {
            CompletableFuture<Integer> subscription = line.subscription;
            if (subscription == null || !subscription.isDone() || subscription.isCompletedExceptionally()) {
                return 0;
            }
            return (int) line.waiters.stream().filter(waiter -> !waiter.done).count();
        }
    }

    /** Keys with a line right now (for tests). */
    int lines() {
        return lines.size();
    }
}

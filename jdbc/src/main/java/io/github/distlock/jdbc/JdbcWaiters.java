package io.github.distlock.jdbc;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * This instance's waiters, one line per key in arrival order: only the first of a line sends statements (tries and
 * polls); the others wait for their turn without touching the database, and a call that asks for a key this instance's
 * waiters already wait for joins the end of the line instead of racing them. A release by this instance wakes the first
 * of the key's line as soon as its statement returns; a release by another instance does so through PostgreSQL's
 * {@code NOTIFY} ({@link JdbcListener}). The line only decides who of this instance tries next: the row stays the only
 * truth, and every waiter takes it with the same statement as before, so instances never trust each other's lines.
 *
 * <p>Also remembers for a while which keys other instances said they wait for ({@link #remoteWaiter}): a release of
 * such a key sends a {@code NOTIFY}, the release of any other does not (a notifying commit takes a database-wide lock
 * in PostgreSQL, which uncontended keys should not pay).
 */
final class JdbcWaiters {

    /** How long a key stays marked by default after another instance said it waits for it. */
    static final long REMOTE_WAITER_NANOS = TimeUnit.SECONDS.toNanos(5);

    /** How long a key stays marked after another instance said it waits for it. */
    private final long remoteWaiterNanos;
    /** How often this instance tells the others that it waits for a key: five times per mark's life. */
    private final long announceNanos;

    JdbcWaiters() {
        this(REMOTE_WAITER_NANOS);
    }

    /** With marks of another life than the default five seconds (for tests). */
    JdbcWaiters(long remoteWaiterNanos) {
        this.remoteWaiterNanos = remoteWaiterNanos;
        this.announceNanos = remoteWaiterNanos / 5;
    }

    /** How long a key stays marked after another instance said it waits for it. */
    long remoteWaiterNanos() {
        return remoteWaiterNanos;
    }

    private final Map<String, Line> lines = new ConcurrentHashMap<>();
    /** Keys other instances wait for, until when ({@link System#nanoTime()}). */
    private final Map<String, Long> remoteWaiters = new ConcurrentHashMap<>();

    /**
     * Puts {@code attempt} at the end of its key's line.
     *
     * @return whether it is the first of the line, and may try at once
     */
    boolean join(JdbcAcquisition attempt) {
        boolean[] first = new boolean[1];
        lines.compute(attempt.request.key(), (key, line) -> {
            Line joined = (line != null) ? line : new Line();
            joined.waiters.addLast(attempt);
            first[0] = joined.waiters.peekFirst() == attempt;
            return joined;
        });
        return first[0];
    }

    /**
     * Takes {@code attempt} out of its line, done (acquired, given up, failed or cancelled); when it was the first, the
     * next becomes first: it tries at once unless {@code attempt} acquired the key (then this instance's release wakes
     * it, its polls being the fallback).
     */
    void leave(JdbcAcquisition attempt, boolean acquired) {
        JdbcAcquisition[] next = new JdbcAcquisition[1];
        boolean[] freed = new boolean[1];
        lines.computeIfPresent(attempt.request.key(), (key, line) -> {
            if (line.waiters.peekFirst() == attempt) {
                line.waiters.pollFirst();
                next[0] = line.waiters.peekFirst();
                freed[0] = line.freedMeanwhile;
                line.freedMeanwhile = false;
            }
            else {
                line.waiters.remove(attempt);
            }
            return line.waiters.isEmpty() ? null : line;
        });
        if (next[0] != null) {
            next[0].promote(acquired && !freed[0]);
        }
    }

    /** Wakes the first waiter of {@code key}'s line, if there is one: the key was just freed. */
    void wake(String key) {
        JdbcAcquisition[] first = new JdbcAcquisition[1];
        lines.computeIfPresent(key, (ignored, line) -> {
            first[0] = line.waiters.peekFirst();
            if (first[0] != null && first[0].future.isDone()) {
                // acquired (and already released by its caller) but not yet out of the line: its leave() hands over
                line.freedMeanwhile = true;
            }
            return line;
        });
        if (first[0] != null) {
            first[0].wake();
        }
    }

    /**
     * This instance released {@code key} and told the others, one of which waits for it: this instance's line holds
     * back for {@code nanos} (its first's tries wait until then, see {@link #yieldLeft}), so that the woken instance can
     * take the key; without it the line's next waiter, woken in the same instant, takes it nearly every time and the
     * other instances starve. Then the first is woken, and tries.
     *
     * @return whether a line holds back (there is one)
     */
    boolean yieldTo(String key, long nanos) {
        boolean[] yielding = new boolean[1];
        lines.computeIfPresent(key, (ignored, line) -> {
            line.yieldUntil = System.nanoTime() + nanos;
            line.yielding = true;
            yielding[0] = true;
            return line;
        });
        return yielding[0];
    }

    /** How long {@code key}'s line still holds back for another instance ({@link #yieldTo}), or 0. */
    long yieldLeft(String key) {
        long[] left = new long[1];
        lines.computeIfPresent(key, (ignored, line) -> {
            if (line.yielding) {
                left[0] = Math.max(0, line.yieldUntil - System.nanoTime());
                line.yielding = left[0] > 0;
            }
            return line;
        });
        return left[0];
    }

    /** Wakes the first waiter of every line: notifications may have been missed (the listener reconnected). */
    void wakeAll() {
        List<JdbcAcquisition> firsts = new ArrayList<>();
        lines.forEach((key, line) -> lines.computeIfPresent(key, (ignored, current) -> {
            JdbcAcquisition first = current.waiters.peekFirst();
            if (first != null) {
                firsts.add(first);
            }
            return current;
        }));
        firsts.forEach(JdbcAcquisition::wake);
    }

    /** Another instance waits for {@code key}: its release should be notified for a while. */
    void remoteWaiter(String key) {
        remoteWaiters.put(key, System.nanoTime() + remoteWaiterNanos);
    }

    /** Whether another instance said lately that it waits for {@code key}. */
    boolean remoteWaiters(String key) {
        Long until = remoteWaiters.get(key);
        return until != null && until - System.nanoTime() > 0;
    }

    /** Forgets the keys no other instance said it waits for lately. */
    void forgetStaleRemoteWaiters() {
        long now = System.nanoTime();
        remoteWaiters.values().removeIf(until -> until - now <= 0);
    }

    /**
     * Whether the first waiter of {@code key} should tell the other instances (again) that this instance waits for it,
     * with its next failed try: once a second while the line lasts.
     */
    boolean announceDue(String key) {
        boolean[] due = new boolean[1];
        lines.computeIfPresent(key, (ignored, line) -> {
            due[0] = !line.announced || System.nanoTime() - line.announcedAt >= announceNanos;
            return line;
        });
        return due[0];
    }

    /** A failed try of {@code key}'s first waiter told the other instances that this instance waits. */
    void announced(String key) {
        lines.computeIfPresent(key, (ignored, line) -> {
            line.announced = true;
            line.announcedAt = System.nanoTime();
            return line;
        });
    }

    /** The waiters in {@code key}'s line (for tests). */
    int waiting(String key) {
        int[] size = new int[1];
        lines.computeIfPresent(key, (ignored, current) -> {
            size[0] = current.waiters.size();
            return current;
        });
        return size[0];
    }

    /** The waiters of one key, first to last; guarded by the map's lock of the key. */
    private static final class Line {

        final ArrayDeque<JdbcAcquisition> waiters = new ArrayDeque<>(4);
        /** Whether (and when, by {@link System#nanoTime()}) this line's waiters last told the other instances. */
        boolean announced;
        long announcedAt;
        /** The key was freed while the first was done but not yet out of the line: the next tries at once. */
        boolean freedMeanwhile;
        /** Whether (and until when) the line holds back for another instance: see {@link #yieldTo}. */
        boolean yielding;
        long yieldUntil;
    }
}

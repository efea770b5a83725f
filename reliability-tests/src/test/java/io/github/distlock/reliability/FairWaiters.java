package io.github.distlock.reliability;

import java.time.Duration;

import io.github.distlock.LockOptions;
import io.github.distlock.LockType;

import static org.awaitility.Awaitility.await;

/** What the {@link LockType#FAIR} reliability tests share: the options they lock with and how they queue waiters. */
final class FairWaiters {

    private FairWaiters() {
    }

    /** A FAIR lock renewed by the watchdog, waiting up to {@code wait}. */
    static LockOptions fair(Duration wait) {
        return LockOptions.waitFor(wait).withType(LockType.FAIR).withLeaseTime(LockOptions.WATCHDOG);
    }

    /**
     * Waits until {@code waiter} has sent its request and parked, and Redis has run a script since
     * {@code scriptCallsBefore} (taken before the waiter was started): every lock operation is a script, so the
     * waiter's enqueue has reached Redis, or another lock operation did and the waiter's request is on the wire.
     *
     * <p>Why this is enough to fix the queue order for any fair lock without looking at its private queue structure:
     * the next waiter is only started after this returns, at least {@code MIN_GAP} later, which is hundreds of loopback
     * round trips; a request handed to the client's event loop before that is in Redis before the next one.
     */
    static void awaitQueued(Thread waiter, RedisInspector redisView, long scriptCallsBefore) {
        await().atMost(Duration.ofSeconds(10)).pollDelay(MIN_GAP).pollInterval(Duration.ofMillis(5))
                .until(() -> parked(waiter)
                        && RedisInspector.scriptCalls(redisView.commandCalls()) > scriptCallsBefore);
    }

    /** See {@link #awaitQueued}. */
    static final Duration MIN_GAP = Duration.ofMillis(60);

    private static boolean parked(Thread thread) {
        Thread.State state = thread.getState();
        return state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING;
    }
}

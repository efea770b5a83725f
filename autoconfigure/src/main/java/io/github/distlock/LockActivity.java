package io.github.distlock;

import java.util.List;

/**
 * What this instance holds and waits for through its {@link LockTemplate} right now: the calls in progress, from the
 * start of their wait to the answer of their last release. It is what the actuator endpoint lists, what the health
 * indicator and the {@code distlock.locks.held}/{@code distlock.locks.waiting} gauges count, and what the test kit's
 * {@code LockAssert.assertNoLocksHeld} waits on.
 *
 * <p>{@link DefaultLockTemplate} implements it, and the auto-configured template is also a bean of this type. A
 * template of the application's own need not: readers then show nothing rather than guess.
 *
 * <p>Every answer is a snapshot taken without stopping any call: a call may start or end while it is read, so two
 * answers read one after the other need not agree. Nested calls that re-entered a lock this thread holds are not
 * counted apart: their outer call holds it.
 */
public interface LockActivity {

    /**
     * The lock calls in progress right now, waiting or holding, one entry per key (a call on several keys appears
     * once per key, with the same owner); in no particular order.
     */
    List<ActiveLock> activeLocks();

    /** How many keys are held right now (a call on three keys counts three). */
    int heldLockCount();

    /** How many calls are waiting for their locks right now (a call on three keys counts one). */
    int waitingCallCount();
}

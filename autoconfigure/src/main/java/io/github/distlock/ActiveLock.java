package io.github.distlock;

import java.time.Duration;
import java.time.Instant;

/**
 * One key of a lock call in progress through {@link LockTemplate}, waiting or held, as this instance sees it: what
 * {@link LockActivity#activeLocks()} lists (and the actuator endpoint shows). A call on several keys appears
 * once per key, with the same {@link #owner()}.
 *
 * @param key the full key, prefix included
 * @param type the kind of lock
 * @param name what the call is called ({@link LockOptions#name()}): the annotated method or an explicit name
 * @param thread the thread that started the call (for an asynchronous call, the one that asked for the lock)
 * @param owner the call's owner id ({@link io.github.distlock.spi.LockOwner}), unique in this process; a backend
 * combines it with its client id ({@code <client id>:<owner>} in Redis)
 * @param held {@code true} when every key of the call is held, {@code false} while it still waits
 * @param since when the call started waiting, or when it got its keys
 * @param duration how long it has waited or held so far
 * @param lease the fixed lease, or {@code null} for the watchdog (renewed while held)
 * @param leaseRemaining what is left of a fixed lease by this instance's clock (zero once it ran out), or {@code null}
 * (watchdog, or still waiting)
 * @param fencingToken the key's fencing token, {@code -1} when none was issued
 */
public record ActiveLock(String key, LockType type, String name, String thread, long owner, boolean held, Instant since,
        Duration duration, Duration lease, Duration leaseRemaining, long fencingToken) {
}

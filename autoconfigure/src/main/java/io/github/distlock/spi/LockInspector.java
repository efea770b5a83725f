package io.github.distlock.spi;

import java.time.Duration;
import java.util.List;

import org.jspecify.annotations.Nullable;

/**
 * What an operator asks a lock backend beyond locking: who holds a key on any instance, take a lock away, is the
 * backend reachable. Optional: a {@link LockProvider} that also implements this interface gets the actuator
 * endpoint's lookup ({@code GET /actuator/distlock/{key}}), its force release ({@code DELETE}) and the health
 * indicator's ping; without it those answer "not supported" and the rest of distlock works as before.
 *
 * <p>Every method blocks for at most about the backend's command timeout (or the given timeout) and throws a
 * {@link RuntimeException} when the backend fails; none is on the path of a lock call.
 *
 * <p>An implementation makes holders readable across instances: {@link #announce} is called once at startup with
 * this instance's identity, which the backend stores beside its own client identity (the one it puts into the owner
 * of every lock this instance takes) and keeps while the instance lives, so that {@link #holders} on another instance
 * can name the instance behind an owner. The entry must expire by itself when the instance dies (a TTL, an ephemeral
 * node, a lease): a crashed instance must not be named forever.
 */
public interface LockInspector {

    /**
     * Who holds {@code key} right now, on any instance.
     *
     * @param key the full key, prefix included, as the template passes it to {@link LockProvider#acquire}; every
     * {@link io.github.distlock.LockType} of the key is looked at
     * @return the live holders, empty when nobody holds the key; several for a shared ({@code READ}) lock or permits.
     * A holder whose lease ran out is not listed, even where the backend still keeps a trace of it
     * @throws NotALockException when the key exists but is not a lock of this backend
     */
    List<LockHolderInfo> holders(String key);

    /**
     * Takes {@code key} away from every holder of every type (lock, readers and writer, permits) and wakes the callers
     * waiting for it, as if every holder had released it. The evicted holders learn it like any lost lock: a watchdog lock's holder through its
     * lease check while it still runs, a fixed lease's at release. The read and the delete are one atomic step, so
     * the holders returned are exactly the ones evicted.
     *
     * @param key the full key, prefix included
     * @return the holders evicted, empty when nobody held the key
     * @throws NotALockException when the key exists but is not a lock of this backend (nothing is deleted)
     */
    List<LockHolderInfo> forceRelease(String key);

    /**
     * Like {@link #forceRelease(String)}, but only while {@code expectedOwner} (an owner as {@link #holders} names it)
     * still holds {@code key}: checked and deleted in one atomic step, so a lock that changed hands since the operator
     * looked is left alone. Only that owner's holds are taken (its lock, its read and write holds, its permits): the
     * other readers and permit holders keep theirs, and a writer stays excluded while any of them holds. The default
     * supports only {@code expectedOwner == null}.
     *
     * @param key the full key, prefix included
     * @param expectedOwner the owner that must still hold the key, or {@code null} for whoever holds it
     * @return whether anything was taken away, with the holds evicted (all of {@code expectedOwner}'s, or every hold
     * when it is {@code null}); otherwise, with the holders of the key now (empty when nobody holds it)
     * @throws NotALockException when the key exists but is not a lock of this backend
     */
    default ForceRelease forceRelease(String key, @Nullable String expectedOwner) {
        if (expectedOwner == null) {
            List<LockHolderInfo> evicted = forceRelease(key);
            return new ForceRelease(!evicted.isEmpty(), evicted);
        }
        throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot force-release a lock only from "
                + "an expected owner");
    }

    /**
     * The answer of {@link #forceRelease(String, String)}.
     *
     * @param released whether the lock was taken away
     * @param holders the holders evicted when {@code released}, otherwise the holders now
     */
    record ForceRelease(boolean released, List<LockHolderInfo> holders) {

        /** Copies {@code holders}. */
        public ForceRelease {
            holders = List.copyOf(holders);
        }
    }

    /**
     * How {@link #holders} names the owner of an acquisition this provider made for {@code ownerId}
     * ({@link LockOwner#id()}): the one owner format an operator sees everywhere (the endpoint's list of this instance's
     * locks, its key view, the owner a force release expects). Every first-party backend answers
     * {@code <instance id>:<owner id>}, the owner id in decimal and the instance id as {@link LockHolderInfo#instanceId()}
     * gives it. The default answers the owner id alone.
     */
    default String ownerName(long ownerId) {
        return Long.toString(ownerId);
    }

    /**
     * Whether the backend answers within {@code timeout}: the health indicator's question. Returns {@code false}
     * (never throws) when it does not answer in time or fails.
     */
    boolean ping(Duration timeout);

    /**
     * Makes this instance known to the other instances, under the client identity of this provider, until this
     * provider is closed (or the instance dies and the entry expires). Called once at startup; must not block or fail
     * the startup when the backend is unreachable (store it when it is back). The default stores nothing:
     * {@link #holders} then reports owners without an instance.
     */
    default void announce(LockInstance self) {
    }
}

package io.github.distlock;

/**
 * A call nested in another call of the same thread names a key the outer call holds, but asks for a lock the outer
 * hold does not give it: another {@link LockType} family, a {@code WRITE} (or other exclusive) lock inside a
 * {@code READ} hold, or other {@link LockOptions#permits() permits}. Re-entering would run the nested code beside
 * holders it believes excluded, and taking the lock anew would wait for the outer call; so the nested call is refused
 * at once and its code does not run. The outer call's lock stays held.
 *
 * <p>What a hold of one type lets a nested call of the same thread re-enter:
 * <ul>
 * <li>{@code REENTRANT} or {@code FAIR}: {@code REENTRANT} and {@code FAIR} (one exclusive lock family);</li>
 * <li>{@code WRITE}: {@code WRITE} and {@code READ} (the writer already excludes everyone);</li>
 * <li>{@code READ}: {@code READ} only.</li>
 * </ul>
 * {@code READ}/{@code WRITE} and {@code REENTRANT}/{@code FAIR} are apart on some backends (on Redis they live in
 * different keys), so one never stands in for the other.
 *
 * <p>A programming error, not contention: an {@link IllegalStateException} (as before it had a type of its own), not
 * a {@link DistributedLockException}, so that a handler mapping "lock busy" to a retry or an HTTP 409 does not hide it.
 */
public class NestedLockException extends IllegalStateException {

    private final String key;
    private final LockType heldType;
    private final LockType requestedType;
    private final int heldPermits;
    private final int requestedPermits;

    /**
     * @param key the full key of the lock
     * @param heldType the type the outer call holds
     * @param heldPermits the permits of the outer call's hold
     * @param requestedType the type the nested call asked for
     * @param requestedPermits the permits the nested call asked for
     */
    public NestedLockException(String key, LockType heldType, int heldPermits, LockType requestedType,
            int requestedPermits) {
        super(message(key, heldType, heldPermits, requestedType, requestedPermits));
        this.key = key;
        this.heldType = heldType;
        this.requestedType = requestedType;
        this.heldPermits = heldPermits;
        this.requestedPermits = requestedPermits;
    }

    /** Whether a hold of type {@code held} lets a nested call of type {@code requested} re-enter it. */
    public static boolean reenters(LockType held, LockType requested) {
        return switch (held) {
            case REENTRANT, FAIR -> requested == LockType.REENTRANT || requested == LockType.FAIR;
            case WRITE -> requested == LockType.WRITE || requested == LockType.READ;
            case READ -> requested == LockType.READ;
        };
    }

    /** The full key of the lock, prefix included. */
    public String getKey() {
        return key;
    }

    /** The type the outer call holds. */
    public LockType getHeldType() {
        return heldType;
    }

    /** The type the nested call asked for. */
    public LockType getRequestedType() {
        return requestedType;
    }

    /** The permits of the outer call's hold. */
    public int getHeldPermits() {
        return heldPermits;
    }

    /** The permits the nested call asked for. */
    public int getRequestedPermits() {
        return requestedPermits;
    }

    private static String message(String key, LockType held, int heldPermits, LockType requested,
            int requestedPermits) {
        if (heldPermits != requestedPermits) {
            // a lock and a semaphore of one key are apart (they don't exclude each other), and a permit is not the lock
            return "Lock '" + key + "' is held with permits = " + heldPermits + " by an outer call on this thread; a "
                    + "nested call with permits = " + requestedPermits + " would not exclude what it expects to. Use "
                    + "the same permits in both calls, or different keys.";
        }
        if (held == LockType.READ) {
            return "Lock '" + key + "' is held for READ by an outer call on this thread; a nested " + requested
                    + " call on it would wait for itself, or run beside other readers. Take it as " + requested
                    + " in the outer call.";
        }
        return "Lock '" + key + "' is held as " + held + " by an outer call on this thread; a nested " + requested
                + " call on it is refused: " + held + " does not exclude what a " + requested + " lock excludes (READ/"
                + "WRITE and REENTRANT/FAIR locks of one key are apart on some backends). Use one lock family per key.";
    }
}

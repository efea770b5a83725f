package io.github.distlock;

/**
 * The key was closed ({@link LockTemplate#closeKey}): every caller waiting for it, and every caller that asks for it
 * until it is reopened, fails at once with this exception instead of waiting out its wait time. The guarded code did
 * not run. For the end of a sale: once the last item is sold, the buyers still queued on the product's lock get their
 * answer at once, not after their wait or after taking the lock only to find nothing left.
 */
public class LockKeyClosedException extends DistributedLockException {

    private final String reason;

    /**
     * @param key the full key of the lock
     * @param reason what the closer said, such as "sold out"
     */
    public LockKeyClosedException(String key, String reason) {
        super(key, "Lock '" + key + "' is closed: " + reason, null);
        this.reason = reason;
    }

    /** What the caller of {@link LockTemplate#closeKey} gave as the reason. */
    public String getReason() {
        return reason;
    }
}

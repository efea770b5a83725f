package io.github.distlock.test;

import io.github.distlock.LockType;
import org.jspecify.annotations.Nullable;

/**
 * One lock a thread held when a {@link LockRecorder} recorded it.
 *
 * @param key the full key, prefix included
 * @param type the kind of lock the provider holds it as; {@code null} when the provider no longer held it (its lease
 * was lost, or ran out, while the code still ran)
 * @param permits how many holders the key admits: {@code 1} for a lock, more for a semaphore
 * @param fencingToken the thread's fencing token for the key, {@code -1} when the lock is not fenced
 */
public record RecordedLock(String key, @Nullable LockType type, int permits, long fencingToken) {

    /** Whether the lock was fenced (a token was issued for it). */
    public boolean fenced() {
        return fencingToken >= 0;
    }

    /** Whether the thread still ran under the key while the provider no longer held it for anyone of its type. */
    public boolean lost() {
        return type == null;
    }

    @Override
    public String toString() {
        if (lost()) {
            return key + " (lost: the provider no longer held it)";
        }
        return key + " (" + type + ((permits > 1) ? ", permits " + permits : "")
                + (fenced() ? ", fenced, token " + fencingToken : ", unfenced") + ")";
    }
}

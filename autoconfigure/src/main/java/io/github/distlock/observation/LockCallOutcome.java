package io.github.distlock.observation;

import java.util.Locale;

/** How a lock call ended: the {@code outcome} of its {@code distlock.lock} observation. */
public enum LockCallOutcome {

    /** Every key was released by its holder. */
    RELEASED,
    /** Another caller held a key for the whole wait; the guarded code did not run. */
    NOT_ACQUIRED,
    /** The caller stopped waiting (interrupted, cancelled); the guarded code did not run. */
    CANCELLED,
    /** The backend failed, or refused the request, while acquiring; the guarded code did not run. */
    ERROR,
    /** A key was lost while held (lease ran out, renewal failed, taken away): another caller may have run meanwhile. */
    LEASE_LOST,
    /** A release failed; the lock expires by itself. */
    RELEASE_FAILED;

    private final String value = name().toLowerCase(Locale.ROOT);

    /** The tag value: the name in lower case, such as {@code not_acquired}. */
    public String value() {
        return value;
    }
}

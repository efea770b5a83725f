package io.github.distlock.observation;

import java.util.List;

import io.github.distlock.LockType;
import io.micrometer.observation.Observation;

/**
 * What a {@code distlock.lock} observation knows about its lock call: started when the call begins to wait, an
 * {@link #ACQUIRED} event when it holds every key, stopped when the last key's release has answered (or when the call
 * gave up). The outcome is set just before the stop.
 */
public class LockObservationContext extends Observation.Context {

    /** The event marking the end of the wait and the start of the hold. */
    public static final Observation.Event ACQUIRED = Observation.Event.of("acquired", "lock acquired");

    private final List<String> keys;
    private final String lockName;
    private final LockType type;
    private volatile LockCallOutcome outcome;

    /**
     * @param keys the full keys of the call
     * @param lockName the call's low-cardinality name ({@link io.github.distlock.LockOptions#name()})
     * @param type the kind of lock
     */
    public LockObservationContext(List<String> keys, String lockName, LockType type) {
        this.keys = keys;
        this.lockName = lockName;
        this.type = type;
    }

    /** The full keys, prefix included: high cardinality, possibly personal data. */
    public List<String> getKeys() {
        return keys;
    }

    /** The call's name: the annotated method ({@code OrderService.placeOrder}) or the template call's name. */
    public String getLockName() {
        return lockName;
    }

    /** The kind of lock. */
    public LockType getType() {
        return type;
    }

    /** How the call ended; {@code null} until it has. */
    public LockCallOutcome getOutcome() {
        return outcome;
    }

    /** Set by the template when the call ends. */
    public void setOutcome(LockCallOutcome outcome) {
        this.outcome = outcome;
    }
}

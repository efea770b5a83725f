package io.github.distlock.observation;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * Names and tags {@code distlock.lock} observations. Declare a bean of this type to replace
 * {@link DefaultLockObservationConvention} (for example to leave the key out of traces).
 */
public interface LockObservationConvention extends ObservationConvention<LockObservationContext> {

    @Override
    default boolean supportsContext(Observation.Context context) {
        return context instanceof LockObservationContext;
    }
}

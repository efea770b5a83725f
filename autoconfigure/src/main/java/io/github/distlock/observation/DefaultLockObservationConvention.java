package io.github.distlock.observation;

import java.util.Locale;

import io.micrometer.common.KeyValue;
import io.micrometer.common.KeyValues;

/**
 * {@code distlock.lock}, with low-cardinality {@code name}, {@code type} and {@code outcome} (fit for metrics: the
 * timer Micrometer derives from the observation is tagged with them) and the key as the high-cardinality {@code key}
 * (spans only, never a metric tag: keys are unbounded).
 */
public class DefaultLockObservationConvention implements LockObservationConvention {

    /** The observation's name, and so the timer's and the span's. */
    public static final String NAME = "distlock.lock";

    /** The shared instance. */
    public static final DefaultLockObservationConvention INSTANCE = new DefaultLockObservationConvention();

    @Override
    public String getName() {
        return NAME;
    }

    @Override
    public String getContextualName(LockObservationContext context) {
        return "lock " + context.getLockName();
    }

    @Override
    public KeyValues getLowCardinalityKeyValues(LockObservationContext context) {
        LockCallOutcome outcome = context.getOutcome();
        return KeyValues.of(
                KeyValue.of(LockObservationDocumentation.LowCardinalityKeys.NAME, context.getLockName()),
                KeyValue.of(LockObservationDocumentation.LowCardinalityKeys.TYPE,
                        context.getType().name().toLowerCase(Locale.ROOT)),
                KeyValue.of(LockObservationDocumentation.LowCardinalityKeys.OUTCOME,
                        (outcome != null) ? outcome.value() : "unknown"));
    }

    @Override
    public KeyValues getHighCardinalityKeyValues(LockObservationContext context) {
        return KeyValues.of(KeyValue.of(LockObservationDocumentation.HighCardinalityKeys.KEY,
                String.join(",", context.getKeys())));
    }
}

package io.github.distlock.observation;

import io.micrometer.common.docs.KeyName;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;
import io.micrometer.observation.docs.ObservationDocumentation;

/** The {@code distlock.lock} observation: one per lock call, over its wait and its hold. */
public enum LockObservationDocumentation implements ObservationDocumentation {

    /** A lock call through {@link io.github.distlock.LockTemplate} (and so through the annotation). */
    LOCK {
        @Override
        public Class<? extends ObservationConvention<? extends Observation.Context>> getDefaultConvention() {
            return DefaultLockObservationConvention.class;
        }

        @Override
        public KeyName[] getLowCardinalityKeyNames() {
            return LowCardinalityKeys.values();
        }

        @Override
        public KeyName[] getHighCardinalityKeyNames() {
            return HighCardinalityKeys.values();
        }

        @Override
        public Observation.Event[] getEvents() {
            return new Observation.Event[] {LockObservationContext.ACQUIRED};
        }
    };

    /** Tags fit for metrics: few values each. */
    public enum LowCardinalityKeys implements KeyName {

        /** The annotated method ({@code OrderService.placeOrder}), the annotation's or the call's name. */
        NAME {
            @Override
            public String asString() {
                return "name";
            }
        },
        /** {@code reentrant}, {@code fair}, {@code read}, {@code write}. */
        TYPE {
            @Override
            public String asString() {
                return "type";
            }
        },
        /** A {@link LockCallOutcome} value: {@code released}, {@code not_acquired}, {@code lease_lost}, ... */
        OUTCOME {
            @Override
            public String asString() {
                return "outcome";
            }
        }
    }

    /** Span-only values: unbounded. */
    public enum HighCardinalityKeys implements KeyName {

        /** The full key(s), comma-separated. */
        KEY {
            @Override
            public String asString() {
                return "key";
            }
        }
    }
}

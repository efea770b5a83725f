package io.github.distlock.metrics;

import io.github.distlock.LockEvent;
import io.github.distlock.LockListener;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

/**
 * Records every lock in Micrometer, without the key as a tag (keys such as {@code order:<userId>} are unbounded):
 * <ul>
 * <li>{@code distlock.acquire} (timer of the wait), tag {@code result}: {@code acquired}, {@code not_acquired}
 * (held by another for the whole wait), {@code error} (backend failure);</li>
 * <li>{@code distlock.held} (timer of the hold), tag {@code result}: {@code released}, {@code lease_lost} (another
 * caller may have run concurrently: alert on it), {@code release_failed}.</li>
 * </ul>
 * Auto-configured when a {@link MeterRegistry} bean exists.
 */
public class MicrometerLockListener implements LockListener {

    private final Timer acquired;
    private final Timer notAcquired;
    private final Timer acquireError;
    private final Timer released;
    private final Timer leaseLost;
    private final Timer releaseFailed;

    /**
     * @param registry where the timers live
     */
    public MicrometerLockListener(MeterRegistry registry) {
        acquired = acquireTimer(registry, "acquired");
        notAcquired = acquireTimer(registry, "not_acquired");
        acquireError = acquireTimer(registry, "error");
        released = heldTimer(registry, "released");
        leaseLost = heldTimer(registry, "lease_lost");
        releaseFailed = heldTimer(registry, "release_failed");
    }

    @Override
    public void onAcquired(LockEvent event) {
        acquired.record(event.waited());
    }

    @Override
    public void onNotAcquired(LockEvent event) {
        (event.failure() == null || event.failure() instanceof InterruptedException ? notAcquired : acquireError)
                .record(event.waited());
    }

    @Override
    public void onReleased(LockEvent event) {
        released.record(event.held());
    }

    @Override
    public void onLeaseLost(LockEvent event) {
        leaseLost.record(event.held());
    }

    @Override
    public void onReleaseFailed(LockEvent event) {
        releaseFailed.record(event.held());
    }

    private static Timer acquireTimer(MeterRegistry registry, String result) {
        return Timer.builder("distlock.acquire").description("Time waited for a distributed lock")
                .tag("result", result).register(registry);
    }

    private static Timer heldTimer(MeterRegistry registry, String result) {
        return Timer.builder("distlock.held").description("Time a distributed lock was held")
                .tag("result", result).register(registry);
    }
}

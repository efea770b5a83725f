package io.github.distlock;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.function.BiConsumer;

import io.github.distlock.observation.DefaultLockObservationConvention;
import io.github.distlock.observation.LockCallOutcome;
import io.github.distlock.observation.LockObservationContext;
import io.github.distlock.observation.LockObservationConvention;
import io.github.distlock.spi.LockHandle;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * Tells the outside world what happens to the calls of one {@link DefaultLockTemplate}: its {@link LockListener}s,
 * its log, and its {@code distlock.lock} observations. Nothing here decides anything about a lock: whatever a listener
 * or an observation handler throws is logged and goes no further.
 */
final class LockNotifier {

    /**
     * The template's own logger, not this class's: what a lock call logs has always been logged under
     * {@link DefaultLockTemplate}, and applications (and tests) configure and capture it by that name.
     */
    static final Log logger = LogFactory.getLog(DefaultLockTemplate.class);

    private final LockListener[] listeners;
    private volatile ObservationRegistry observationRegistry = ObservationRegistry.NOOP;
    private volatile LockObservationConvention observationConvention;

    LockNotifier(List<? extends LockListener> listeners) {
        this.listeners = listeners.toArray(LockListener[]::new);
    }

    void setObservationRegistry(ObservationRegistry observationRegistry) {
        this.observationRegistry = Objects.requireNonNull(observationRegistry, "observationRegistry");
    }

    void setObservationConvention(LockObservationConvention observationConvention) {
        this.observationConvention = observationConvention;
    }

    /** The registry new calls are observed with: read once per call, so a call's observation and scopes agree. */
    ObservationRegistry observationRegistry() {
        return observationRegistry;
    }

    // ---------------------------------------------------------------- listeners and the log

    /** An event about the wait that started at {@code waitStart}. */
    void notifyWaited(BiConsumer<LockListener, LockEvent> callback, String fullKey, long waitStart,
            Throwable failure) {
        if (listeners.length > 0) {
            notifyListeners(callback, new LockEvent(fullKey, Duration.ofNanos(System.nanoTime() - waitStart),
                    Duration.ZERO, failure));
        }
    }

    /** An event about the hold that started at {@code acquiredAt}. */
    void notifyHeld(BiConsumer<LockListener, LockEvent> callback, String fullKey, long acquiredAt,
            Throwable failure) {
        if (listeners.length > 0) {
            notifyListeners(callback, new LockEvent(fullKey, Duration.ZERO,
                    Duration.ofNanos(System.nanoTime() - acquiredAt), failure));
        }
    }

    /**
     * Listeners only observe: whatever one throws, {@code Error}s included, is logged and goes no further, so it can
     * neither keep a lock from being released nor stop the thread that reports lost leases.
     */
    private void notifyListeners(BiConsumer<LockListener, LockEvent> callback, LockEvent event) {
        for (LockListener listener : listeners) {
            try {
                callback.accept(listener, event);
            }
            catch (Throwable ex) {
                logger.error("LockListener " + listener + " failed on lock '" + event.key() + "'; ignored", ex);
            }
        }
    }

    /** Reports the outcome of one key's release: {@code Boolean} released or not, or the backend's failure. */
    void reportRelease(String fullKey, LockHandle handle, long acquiredAt, Object outcome) {
        if (outcome instanceof Throwable failure) {
            logger.warn("Could not release lock '" + fullKey + "' after " + millisSince(acquiredAt)
                    + " ms; the backend keeps trying, and it expires by itself within its lease or the watchdog "
                    + "timeout: " + failure);
            notifyHeld(LockListener::onReleaseFailed, fullKey, acquiredAt, failure);
        }
        else if (Boolean.TRUE.equals(outcome)) {
            if (handle.lostWhileHeld()) {
                logger.info("Lock '" + fullKey + "', reported lost while held, was still this holder's at release");
            }
            notifyHeld(LockListener::onReleased, fullKey, acquiredAt, null);
        }
        else if (!handle.lostWhileHeld()) {
            logger.warn("Lock '" + fullKey + "' was lost before it was released, after " + millisSince(acquiredAt)
                    + " ms: its lease ran out or could not be renewed, so another caller may have held it meanwhile. "
                    + "The guarded call's own result stands; use a longer lease, the watchdog, or fencing tokens.");
            notifyHeld(LockListener::onLeaseLost, fullKey, acquiredAt, null);
        }
    }

    /** Called on a background thread while the guarded code still runs. */
    void reportLostWhileHeld(String fullKey, long acquiredAt, String reason) {
        logger.warn("Lock '" + fullKey + "' was lost while its holder still runs, " + millisSince(acquiredAt)
                + " ms after it was acquired: " + reason + ". Another caller may take it now.");
        notifyHeld(LockListener::onLeaseLost, fullKey, acquiredAt, null);
    }

    private static long millisSince(long nanoTime) {
        return (System.nanoTime() - nanoTime) / 1_000_000;
    }

    // ---------------------------------------------------------------- observation

    /**
     * A started {@code distlock.lock} observation for a new call, or {@code null} when nothing observes or a handler
     * (or convention) failed to start it: the call then goes on unobserved, as it would without a registry.
     */
    Observation startObservation(String[] keys, LockOptions options, ObservationRegistry registry) {
        if (registry.isNoop()) {
            return null;
        }
        try {
            LockObservationContext context = new LockObservationContext(List.of(keys), options.name(), options.type());
            return Observation.createNotStarted(observationConvention, DefaultLockObservationConvention.INSTANCE,
                    () -> context, registry).start();
        }
        catch (Throwable ex) {
            logger.error("Observation handler failed at the start of lock '" + String.join(", ", keys)
                    + "'; the call is not observed", ex);
            return null;
        }
    }

    /**
     * Opens {@code observation}'s scope, or returns {@code null} when a handler failed. Micrometer makes the scope the
     * thread's current one before it calls the handlers, so after a failure nobody would close it and the next task
     * on this (pooled) thread would run inside a stale observation: the thread's scope goes back to {@code previous}.
     */
    static Observation.Scope openScope(Observation observation, ObservationRegistry registry,
            Observation.Scope previous, String[] keys) {
        try {
            return observation.openScope();
        }
        catch (Throwable ex) {
            restoreScope(registry, previous);
            logger.error("Observation handler failed opening the scope of lock '" + String.join(", ", keys)
                    + "'; the guarded code runs outside it", ex);
            return null;
        }
    }

    /** Closes {@code scope}; a handler's failure is logged and the guarded code's result or exception stands. */
    static void closeScope(Observation.Scope scope, ObservationRegistry registry, Observation.Scope previous,
            String[] keys) {
        if (scope == null) {
            return;
        }
        try {
            scope.close();
        }
        catch (Throwable ex) {
            restoreScope(registry, previous);
            logger.error("Observation handler failed closing the scope of lock '" + String.join(", ", keys)
                    + "'; ignored", ex);
        }
    }

    private static void restoreScope(ObservationRegistry registry, Observation.Scope previous) {
        try {
            registry.setCurrentObservationScope(previous);
        }
        catch (Throwable ex) {
            logger.error("Could not restore the observation scope of this thread", ex);
        }
    }

    /** Stops the observation of an ended call, if it has one, with {@code outcome}. */
    static void stopObservation(ActiveCall call, LockCallOutcome outcome, Throwable failure) {
        Observation observation = call.observation;
        if (observation != null) {
            try {
                if (observation.getContext() instanceof LockObservationContext context) {
                    context.setOutcome(outcome);
                }
                if (failure != null) {
                    observation.error(failure);
                }
                observation.stop();
            }
            catch (Throwable ex) {
                // an observation handler only observes, as a listener does
                logger.error("Observation handler failed on lock '" + String.join(", ", call.keys) + "'; ignored", ex);
            }
        }
    }

    @Override
    public String toString() {
        return Arrays.toString(listeners);
    }
}

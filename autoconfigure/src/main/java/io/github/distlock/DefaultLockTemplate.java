package io.github.distlock;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.BiConsumer;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * The {@link LockTemplate} on a {@link LockProvider}. Auto-configured; build one yourself only outside Spring Boot.
 */
public class DefaultLockTemplate implements LockTemplate {

    private static final Log logger = LogFactory.getLog(DefaultLockTemplate.class);

    private final LockProvider provider;
    private final String keyPrefix;
    private final long defaultWaitNanos;
    private final long defaultLeaseNanos;
    private final LockListener[] listeners;

    /**
     * @param provider the backend
     * @param keyPrefix prepended to every key
     * @param defaultWait the wait when a call gives none
     * @param defaultLease the lease when a call gives none; {@code null} or zero for watchdog renewal
     * @param listeners observers of every lock, in order
     */
    public DefaultLockTemplate(LockProvider provider, String keyPrefix, Duration defaultWait, Duration defaultLease,
            List<? extends LockListener> listeners) {
        this.provider = Objects.requireNonNull(provider, "provider");
        this.keyPrefix = (keyPrefix != null) ? keyPrefix : "";
        LockOptions defaults = new LockOptions(Objects.requireNonNull(defaultWait, "defaultWait"), defaultLease, false);
        this.defaultWaitNanos = defaults.waitTime().toNanos();
        this.defaultLeaseNanos = (defaultLease != null) ? defaultLease.toNanos() : 0;
        this.listeners = listeners.toArray(LockListener[]::new);
    }

    @Override
    public <T, E extends Throwable> T execute(String key, LockOptions options, LockCallback<T, E> callback) throws E {
        Objects.requireNonNull(options, "options");
        String fullKey = fullKey(key);
        long waitNanos = waitNanos(options);
        long start = System.nanoTime();
        LockHandle handle = acquire(fullKey, waitNanos, leaseNanos(options), options.fenced(), start);
        if (handle == null) {
            throw new LockAcquisitionException(fullKey, Duration.ofNanos(waitNanos), null);
        }
        return runAndRelease(fullKey, handle, options.fenced(), callback);
    }

    @Override
    public <T, E extends Throwable> LockResult<T> tryExecute(String key, LockOptions options, LockCallback<T, E> callback)
            throws E {
        Objects.requireNonNull(options, "options");
        String fullKey = fullKey(key);
        long start = System.nanoTime();
        LockHandle handle = acquire(fullKey, waitNanos(options), leaseNanos(options), options.fenced(), start);
        if (handle == null) {
            return LockResult.notAcquired();
        }
        return LockResult.of(runAndRelease(fullKey, handle, options.fenced(), callback));
    }

    @Override
    public String fullKey(String key) {
        if (key == null || key.isBlank()) {
            throw new IllegalArgumentException("Lock key must not be null or blank, was " + (key == null ? "null" : "'" + key + "'"));
        }
        return keyPrefix.concat(key);
    }

    /** Returns the handle, or {@code null} when another holder kept the lock for the whole wait. */
    private LockHandle acquire(String fullKey, long waitNanos, long leaseNanos, boolean fenced, long start) {
        LockHandle handle;
        try {
            handle = provider.tryAcquire(fullKey, waitNanos, leaseNanos, fenced);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            notifyWaited(LockListener::onNotAcquired, fullKey, start, ex);
            throw new LockAcquisitionException(fullKey, Duration.ofNanos(waitNanos), ex);
        }
        catch (RuntimeException ex) {
            notifyWaited(LockListener::onNotAcquired, fullKey, start, ex);
            throw new LockBackendException(fullKey, ex);
        }
        if (handle == null) {
            notifyWaited(LockListener::onNotAcquired, fullKey, start, null);
        }
        else {
            notifyWaited(LockListener::onAcquired, fullKey, start, null);
        }
        return handle;
    }

    private <T, E extends Throwable> T runAndRelease(String fullKey, LockHandle handle, boolean fenced,
            LockCallback<T, E> callback) throws E {
        long acquiredAt = System.nanoTime();
        handle.whenLost(reason -> reportLostWhileHeld(fullKey, acquiredAt, reason));
        if (fenced) {
            LockContext.push(fullKey, handle.fencingToken());
        }
        try {
            return callback.doInLock();
        }
        finally {
            if (fenced) {
                LockContext.pop();
            }
            release(fullKey, handle, acquiredAt);
        }
    }

    /**
     * Never throws: the guarded code has finished, and its own result or exception is what the caller must see.
     */
    private void release(String fullKey, LockHandle handle, long acquiredAt) {
        boolean released;
        try {
            released = handle.release();
        }
        catch (RuntimeException ex) {
            logger.warn("Could not release lock '" + fullKey + "' after " + millisSince(acquiredAt)
                    + " ms; it expires by itself within its lease or the watchdog timeout: " + ex);
            notifyHeld(LockListener::onReleaseFailed, fullKey, acquiredAt, ex);
            return;
        }
        if (released) {
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

    /** Called on a backend thread while the guarded code still runs. */
    private void reportLostWhileHeld(String fullKey, long acquiredAt, String reason) {
        logger.warn("Lock '" + fullKey + "' was lost while its holder still runs, " + millisSince(acquiredAt)
                + " ms after it was acquired: " + reason + ". Another caller may take it now.");
        notifyHeld(LockListener::onLeaseLost, fullKey, acquiredAt, null);
    }

    /** An event about the wait that started at {@code waitStart}. */
    private void notifyWaited(BiConsumer<LockListener, LockEvent> callback, String fullKey, long waitStart,
            Throwable failure) {
        if (listeners.length > 0) {
            notifyListeners(callback, new LockEvent(fullKey, Duration.ofNanos(System.nanoTime() - waitStart),
                    Duration.ZERO, failure));
        }
    }

    /** An event about the hold that started at {@code acquiredAt}. */
    private void notifyHeld(BiConsumer<LockListener, LockEvent> callback, String fullKey, long acquiredAt,
            Throwable failure) {
        if (listeners.length > 0) {
            notifyListeners(callback, new LockEvent(fullKey, Duration.ZERO,
                    Duration.ofNanos(System.nanoTime() - acquiredAt), failure));
        }
    }

    private void notifyListeners(BiConsumer<LockListener, LockEvent> callback, LockEvent event) {
        for (LockListener listener : listeners) {
            try {
                callback.accept(listener, event);
            }
            catch (RuntimeException ex) {
                logger.warn("LockListener " + listener + " failed on lock '" + event.key() + "'; ignored", ex);
            }
        }
    }

    private long waitNanos(LockOptions options) {
        return (options.waitTime() != null) ? options.waitTime().toNanos() : defaultWaitNanos;
    }

    private long leaseNanos(LockOptions options) {
        return (options.leaseTime() != null) ? options.leaseTime().toNanos() : defaultLeaseNanos;
    }

    private static long millisSince(long nanoTime) {
        return (System.nanoTime() - nanoTime) / 1_000_000;
    }
}

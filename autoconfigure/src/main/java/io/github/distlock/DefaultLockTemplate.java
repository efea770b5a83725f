package io.github.distlock;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.BiConsumer;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * The {@link LockTemplate} on a {@link LockProvider}. Auto-configured; build one yourself only outside Spring Boot.
 *
 * <p>Every first acquisition of a key gets an owner of its own ({@link LockOwner}). A nested call on a key this thread
 * already holds re-enters the held lock here, without asking the backend: the outer call's lease (fixed or watchdog),
 * owner and fencing token stay exactly as they were, whatever options the nested call names.
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
        LockHandle held = LockContext.held(fullKey);
        if (held != null) {
            return reenter(fullKey, held, options.fenced(), callback);
        }
        long waitNanos = waitNanos(options);
        long start = System.nanoTime();
        LockHandle handle = acquire(fullKey, waitNanos, leaseNanos(options), options.fenced(), start);
        if (handle == null) {
            throw new LockAcquisitionException(fullKey, Duration.ofNanos(waitNanos), null);
        }
        return runAndRelease(fullKey, handle, start, callback);
    }

    @Override
    public <T, E extends Throwable> LockResult<T> tryExecute(String key, LockOptions options, LockCallback<T, E> callback)
            throws E {
        Objects.requireNonNull(options, "options");
        String fullKey = fullKey(key);
        LockHandle held = LockContext.held(fullKey);
        if (held != null) {
            return LockResult.of(reenter(fullKey, held, options.fenced(), callback));
        }
        long start = System.nanoTime();
        LockHandle handle = acquire(fullKey, waitNanos(options), leaseNanos(options), options.fenced(), start);
        if (handle == null) {
            return LockResult.notAcquired();
        }
        return LockResult.of(runAndRelease(fullKey, handle, start, callback));
    }

    @Override
    public String fullKey(String key) {
        if (key == null || key.isBlank()) {
            throw new IllegalArgumentException("Lock key must not be null or blank, was " + (key == null ? "null" : "'" + key + "'"));
        }
        return keyPrefix.concat(key);
    }

    /**
     * A nested call on a key this thread holds: no backend call, no listener events (the outer call reports the
     * hold), and the lease stays the outer call's. A fenced nested call inside an unfenced one has a token issued for
     * the held lock, which the outer call then sees too: it is the newest token issued to this holder.
     */
    private <T, E extends Throwable> T reenter(String fullKey, LockHandle held, boolean fenced, LockCallback<T, E> callback)
            throws E {
        if (fenced && held.fencingToken() < 0) {
            long token;
            try {
                token = held.newFencingToken();
            }
            catch (UnsupportedOperationException ex) {
                throw new IllegalStateException("Lock '" + fullKey + "' is held without fencing and its backend cannot "
                        + "issue a token for the nested fenced call", ex);
            }
            catch (RuntimeException ex) {
                throw new LockBackendException(fullKey, ex);
            }
            if (token < 0) {
                throw new LockAcquisitionException(fullKey, Duration.ZERO, new IllegalStateException("the lock held by "
                        + "the outer call was lost (lease ran out) before the nested fenced call could get a token"));
            }
        }
        LockContext.Frame frame = LockContext.enter(fullKey, held);
        try {
            return callback.doInLock();
        }
        finally {
            LockContext.exit(frame);
        }
    }

    /** Returns the handle, or {@code null} when another holder kept the lock for the whole wait. */
    private LockHandle acquire(String fullKey, long waitNanos, long leaseNanos, boolean fenced, long start) {
        LockHandle handle;
        CompletableFuture<LockHandle> acquisition = null;
        try {
            acquisition = provider.acquire(new LockRequest(fullKey, waitNanos, leaseNanos, fenced, LockOwner.next()));
            handle = acquisition.get();
        }
        catch (InterruptedException ex) {
            // the caller is gone; whatever the acquisition still brings is given back, never left held and renewed
            acquisition.whenComplete((late, failure) -> {
                if (late != null) {
                    releaseQuietly(fullKey, late);
                }
            });
            Thread.currentThread().interrupt();
            notifyWaited(LockListener::onNotAcquired, fullKey, start, ex);
            throw new LockAcquisitionException(fullKey, Duration.ofNanos(waitNanos), ex);
        }
        catch (ExecutionException ex) {
            notifyWaited(LockListener::onNotAcquired, fullKey, start, ex.getCause());
            throw new LockBackendException(fullKey, ex.getCause());
        }
        catch (RuntimeException ex) {
            notifyWaited(LockListener::onNotAcquired, fullKey, start, ex);
            throw new LockBackendException(fullKey, ex);
        }
        if (handle == null) {
            notifyWaited(LockListener::onNotAcquired, fullKey, start, null);
        }
        return handle;
    }

    private <T, E extends Throwable> T runAndRelease(String fullKey, LockHandle handle, long waitStart,
            LockCallback<T, E> callback) throws E {
        long acquiredAt = System.nanoTime();
        LockContext.Frame frame = LockContext.enter(fullKey, handle);
        try {
            // inside the try: whatever happens from here on, the lock is released
            notifyWaited(LockListener::onAcquired, fullKey, waitStart, null);
            handle.whenLost(reason -> reportLostWhileHeld(fullKey, acquiredAt, reason));
            return callback.doInLock();
        }
        finally {
            LockContext.exit(frame);
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
                    + " ms; the backend keeps trying, and it expires by itself within its lease or the watchdog "
                    + "timeout: " + ex);
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

    /** Gives back a lock whose caller stopped waiting for it; may run on a backend thread, so it must not block. */
    private static void releaseQuietly(String fullKey, LockHandle handle) {
        handle.releaseAsync().whenComplete((released, failure) -> {
            if (failure != null) {
                logger.warn("Could not give back lock '" + fullKey + "', acquired after its caller stopped waiting; it "
                        + "expires by itself within its lease: " + failure);
            }
        });
    }

    /** Called on a background thread while the guarded code still runs. */
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

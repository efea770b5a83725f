package io.github.distlock;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.TreeSet;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Supplier;

import io.github.distlock.observation.DefaultLockObservationConvention;
import io.github.distlock.observation.LockCallOutcome;
import io.github.distlock.observation.LockObservationContext;
import io.github.distlock.observation.LockObservationConvention;
import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.util.ClassUtils;

/**
 * The {@link LockTemplate} on a {@link LockProvider}. Auto-configured; build one yourself only outside Spring Boot.
 *
 * <p>Every call that takes locks gets an owner of its own ({@link LockOwner}). A nested call on a key this thread
 * already holds re-enters the held lock here: the backend is only asked whether the outer call still holds it (one
 * round trip; a lost lock makes the nested call fail), and the outer call's lease (fixed or watchdog), owner and fencing
 * token stay exactly as they were, whatever options the nested call names. A nested call re-enters only what the
 * outer hold gives it (same permits; {@code REENTRANT}/{@code FAIR} inside either, {@code READ} or {@code WRITE} inside
 * {@code WRITE}, {@code READ} inside {@code READ}); any other is refused with a {@link NestedLockException}.
 *
 * <p>Asynchronous calls never re-enter: their locks outlive the calling thread's call. {@link #executeAsync} on a key
 * this thread holds (in a call, or until its transaction ends) is refused at once: it takes its keys for a new owner
 * while the calling thread waits, so it would wait for its own thread. The returned future fails with a
 * {@link NestedLockException} naming the key; nothing is thrown and the action does not run. {@link #acquireAsync}
 * does not block the calling thread and is not refused: its acquisition is another owner's, queued behind this
 * thread's hold and granted once that is released, so waiting for it inside the hold ({@code join}, {@code block})
 * waits for the caller itself.
 *
 * <p>Several keys are taken one after the other in their natural order, all within one wait; the first that can't be
 * had releases those taken before it. Asynchronous acquisitions ({@link #acquireAsync}) run on the provider's
 * futures, never blocking a thread; the blocking calls wait on the same futures.
 *
 * <p>It keeps the calls in progress, waiting or holding, in a concurrent map (one entry per call, added when it
 * starts waiting and removed when its last release has answered): {@link #activeLocks()} lists them. With an
 * {@link ObservationRegistry} ({@link #setObservationRegistry}) each call is a {@code distlock.lock} observation over
 * its wait and its hold.
 */
public class DefaultLockTemplate implements LockTemplate {

    private static final Log logger = LogFactory.getLog(DefaultLockTemplate.class);

    private static final boolean TRANSACTIONS_PRESENT = ClassUtils.isPresent(
            "org.springframework.transaction.support.TransactionSynchronizationManager",
            DefaultLockTemplate.class.getClassLoader());

    private final LockProvider provider;
    private final String keyPrefix;
    private final long defaultWaitNanos;
    private final long defaultLeaseNanos;
    /** The configured default lease, {@code null} for the watchdog: the lease of every call that names none. */
    private final Duration defaultLease;
    private final LockListener[] listeners;
    private final boolean releaseAfterTransaction;
    private volatile ScheduledExecutorService delayedReleases;
    /** The calls in progress; see {@link ActiveCall}. A set on a map: {@code ActiveCall} hashes by its owner id. */
    private final java.util.Set<ActiveCall> active = ConcurrentHashMap.newKeySet();
    private volatile ObservationRegistry observationRegistry = ObservationRegistry.NOOP;
    private volatile LockObservationConvention observationConvention;

    /**
     * @param provider the backend
     * @param keyPrefix prepended to every key
     * @param defaultWait the wait when a call gives none
     * @param defaultLease the lease when a call gives none; {@code null} or zero for watchdog renewal
     * @param listeners observers of every lock, in order
     */
    public DefaultLockTemplate(LockProvider provider, String keyPrefix, Duration defaultWait, Duration defaultLease,
            List<? extends LockListener> listeners) {
        this(provider, keyPrefix, defaultWait, defaultLease, listeners, true);
    }

    /**
     * @param provider the backend
     * @param keyPrefix prepended to every key
     * @param defaultWait the wait when a call gives none
     * @param defaultLease the lease when a call gives none; {@code null} or zero for watchdog renewal
     * @param listeners observers of every lock, in order
     * @param releaseAfterTransaction whether a lock taken while a Spring transaction is active on the thread is
     * released only when that transaction has completed (committed or rolled back), so that the next holder never reads
     * this holder's uncommitted state
     */
    public DefaultLockTemplate(LockProvider provider, String keyPrefix, Duration defaultWait, Duration defaultLease,
            List<? extends LockListener> listeners, boolean releaseAfterTransaction) {
        this.provider = Objects.requireNonNull(provider, "provider");
        this.keyPrefix = (keyPrefix != null) ? keyPrefix : "";
        LockOptions defaults = new LockOptions(Objects.requireNonNull(defaultWait, "defaultWait"), defaultLease, false);
        this.defaultWaitNanos = defaults.waitTime().toNanos();
        this.defaultLeaseNanos = (defaults.leaseTime() != null) ? defaults.leaseTime().toNanos() : 0;
        this.defaultLease = (defaults.leaseTime() != null && !defaults.leaseTime().isZero()) ? defaults.leaseTime() : null;
        this.listeners = listeners.toArray(LockListener[]::new);
        this.releaseAfterTransaction = releaseAfterTransaction && TRANSACTIONS_PRESENT;
    }

    /** The backend behind this template. */
    public LockProvider getProvider() {
        return provider;
    }

    /** The prefix of every key. */
    public String getKeyPrefix() {
        return keyPrefix;
    }

    /**
     * Makes every lock call a {@code distlock.lock} observation from the start of its wait to the answer of its last
     * release. {@link ObservationRegistry#NOOP} (the default) observes nothing and costs nothing.
     */
    public void setObservationRegistry(ObservationRegistry observationRegistry) {
        this.observationRegistry = Objects.requireNonNull(observationRegistry, "observationRegistry");
    }

    /** Replaces {@link DefaultLockObservationConvention}; {@code null} restores it. */
    public void setObservationConvention(LockObservationConvention observationConvention) {
        this.observationConvention = observationConvention;
    }

    // ---------------------------------------------------------------- blocking calls

    @Override
    public <T, E extends Throwable> T execute(String key, LockOptions options, LockCallback<T, E> callback) throws E {
        return run(new String[] {fullKey(key)}, options, callback, true).value();
    }

    @Override
    public <T, E extends Throwable> LockResult<T> tryExecute(String key, LockOptions options, LockCallback<T, E> callback)
            throws E {
        return run(new String[] {fullKey(key)}, options, callback, false);
    }

    @Override
    public <T, E extends Throwable> T execute(Collection<String> keys, LockOptions options, LockCallback<T, E> callback)
            throws E {
        return run(fullKeys(keys), options, callback, true).value();
    }

    @Override
    public <T, E extends Throwable> LockResult<T> tryExecute(Collection<String> keys, LockOptions options,
            LockCallback<T, E> callback) throws E {
        return run(fullKeys(keys), options, callback, false);
    }

    private <T, E extends Throwable> LockResult<T> run(String[] keys, LockOptions options, LockCallback<T, E> callback,
            boolean throwWhenNotAcquired) throws E {
        checkSupported(options);
        LockContext.Frame[] reentered = new LockContext.Frame[keys.length];
        int missing = 0;
        for (int i = 0; i < keys.length; i++) {
            reentered[i] = LockContext.reentry(provider, keys[i], options.type(), options.permits());
            if (reentered[i] == null) {
                missing++;
            }
            else {
                checkStillHeld(keys[i], reentered[i].handle());
            }
        }
        Taken taken = null;
        if (missing > 0) {
            String[] toTake = (missing == keys.length) ? keys : missing(keys, reentered, missing);
            taken = takeBlocking(toTake, options);
            if (taken.failedKey() != null) {
                if (throwWhenNotAcquired) {
                    throw new LockAcquisitionException(taken.failedKey(), Duration.ofNanos(taken.waitNanos()), null);
                }
                return LockResult.notAcquired();
            }
        }
        if (options.fenced()) {
            issueTokensForReentry(keys, reentered, taken);
        }
        LockContext.Frame[] frames = new LockContext.Frame[keys.length];
        try {
            for (int i = 0; i < keys.length; i++) {
                LockHandle handle = (reentered[i] != null) ? reentered[i].handle() : taken.handle(keys[i]);
                LockType type = (reentered[i] != null) ? reentered[i].type() : options.type();
                frames[i] = LockContext.enter(provider, keys[i], handle, type,
                        (reentered[i] != null) ? reentered[i].permits() : options.permits());
            }
            if (taken != null) {
                // inside the try: whatever happens from here on, the locks are released
                taken.watch(this);
            }
            Observation observation = (taken != null) ? taken.call().observation : null;
            if (observation == null) {
                return LockResult.of(callback.doInLock());
            }
            // spans the guarded code opens on this thread become children of the lock's
            ObservationRegistry registry = taken.call().observationRegistry;
            Observation.Scope previous = registry.getCurrentObservationScope();
            Observation.Scope scope = openScope(observation, registry, previous, keys);
            try {
                return LockResult.of(callback.doInLock());
            }
            finally {
                closeScope(scope, registry, previous, keys);
            }
        }
        finally {
            try {
                for (int i = frames.length - 1; i >= 0; i--) {
                    if (frames[i] != null) {
                        LockContext.exit(frames[i]);
                    }
                }
            }
            finally {
                if (taken != null) {
                    releaseAfterCall(taken, options);
                }
            }
        }
    }

    /**
     * A nested call re-enters only a lock its outer call still holds: one whose lease ran out or whose key was taken
     * away behind its back belongs to nobody here, and another holder may be inside it right now. Costs one backend
     * round trip per nested call, as re-entering in the backend itself would.
     */
    private static void checkStillHeld(String fullKey, LockHandle handle) {
        boolean held;
        try {
            held = handle.stillHeld();
        }
        catch (RuntimeException ex) {
            throw new LockBackendException(fullKey, ex);
        }
        if (!held) {
            throw new LockAcquisitionException(fullKey, Duration.ZERO, new IllegalStateException("the lock held by the "
                    + "outer call on this thread was lost (its lease ran out or its key was taken away), so the nested "
                    + "call does not run"));
        }
    }

    /** A fenced nested call inside an unfenced hold gets a token issued for the held lock (the outer sees it too). */
    private void issueTokensForReentry(String[] keys, LockContext.Frame[] reentered, Taken taken) {
        for (int i = 0; i < keys.length; i++) {
            if (reentered[i] == null || reentered[i].handle().fencingToken() >= 0) {
                continue;
            }
            long token;
            try {
                token = reentered[i].handle().newFencingToken();
            }
            catch (UnsupportedOperationException ex) {
                releaseTaken(taken);
                throw new IllegalStateException("Lock '" + keys[i] + "' is held without fencing and its backend cannot "
                        + "issue a token for the nested fenced call", ex);
            }
            catch (RuntimeException ex) {
                releaseTaken(taken);
                throw new LockBackendException(keys[i], ex);
            }
            if (token < 0) {
                releaseTaken(taken);
                throw new LockAcquisitionException(keys[i], Duration.ZERO, new IllegalStateException("the lock held by "
                        + "the outer call was lost (lease ran out) before the nested fenced call could get a token"));
            }
        }
    }

    private void releaseTaken(Taken taken) {
        if (taken != null) {
            taken.releaseAsync(this);
        }
    }

    /**
     * Waits for the acquisition. Interrupted, it gives back whatever the acquisition still brings (never left held and
     * renewed for a caller that is gone) and keeps the interrupt.
     */
    private Taken takeBlocking(String[] keys, LockOptions options) {
        CompletableFuture<Taken> acquisition = take(keys, options);
        try {
            return acquisition.get();
        }
        catch (InterruptedException ex) {
            // the chain sees the cancellation and gives back what it took or still takes; if it completed first
            // (between the interrupt and the cancel), what it took is given back here
            if (!acquisition.cancel(false)) {
                acquisition.thenAccept(late -> {
                    if (late.failedKey() == null) {
                        releasePartial(late, late.keys().length, LockCallOutcome.CANCELLED);
                    }
                });
            }
            Thread.currentThread().interrupt();
            notifyWaited(LockListener::onNotAcquired, keys[0], System.nanoTime(), ex);
            throw new LockAcquisitionException(String.join(", ", keys), Duration.ofNanos(waitNanos(options)), ex);
        }
        catch (ExecutionException ex) {
            Throwable cause = ex.getCause();
            throw (cause instanceof RuntimeException runtime) ? runtime : new IllegalStateException(cause);
        }
    }

    // ---------------------------------------------------------------- asynchronous calls

    @Override
    public <T> CompletableFuture<T> executeAsync(Collection<String> keys, LockOptions options,
            Supplier<? extends CompletionStage<T>> action) {
        Objects.requireNonNull(action, "action");
        String[] fullKeys = fullKeys(keys);
        checkSupported(options);
        // before taking anything: on a key this thread holds, the blocking take below would wait for this thread
        NestedLockException nested = LockContext.refuseAsync(provider, fullKeys, options.type(), options.permits());
        if (nested != null) {
            return CompletableFuture.failedFuture(nested);
        }
        Taken taken;
        try {
            taken = takeBlocking(fullKeys, options);
        }
        catch (RuntimeException ex) {
            return CompletableFuture.failedFuture(ex);
        }
        if (taken.failedKey() != null) {
            return CompletableFuture.failedFuture(
                    new LockAcquisitionException(taken.failedKey(), Duration.ofNanos(taken.waitNanos()), null));
        }
        CompletableFuture<T> result = new CompletableFuture<>();
        CompletionStage<T> stage;
        taken.watch(this);
        LockContext.Frame[] frames = new LockContext.Frame[fullKeys.length];
        try {
            // fencingToken() works in the action's synchronous part; nothing re-enters through these frames later
            for (int i = 0; i < fullKeys.length; i++) {
                frames[i] = LockContext.enter(provider, fullKeys[i], taken.handle(fullKeys[i]), options.type(),
                        options.permits());
            }
            stage = Objects.requireNonNull(action.get(), "the action returned no stage");
        }
        catch (Throwable ex) {
            release(taken, options).whenComplete((ignored, never) -> result.completeExceptionally(ex));
            return result;
        }
        finally {
            for (int i = frames.length - 1; i >= 0; i--) {
                if (frames[i] != null) {
                    LockContext.exit(frames[i]);
                }
            }
        }
        // Released when the action's own stage completes, and only then: cancelling the returned future does not
        // stop work already running (CompletableFuture.cancel never does), so it must not end the hold either
        stage.whenComplete((value, failure) -> release(taken, options).whenComplete((ignored, never) -> {
            if (failure != null) {
                result.completeExceptionally(unwrap(failure));
            }
            else {
                result.complete(value);
            }
        }));
        return result;
    }

    /** Releases at once, or schedules the release when the minimum hold is not over; completes when done or scheduled. */
    private CompletableFuture<Void> release(Taken taken, LockOptions options) {
        return releaseLater(taken, options) ? CompletableFuture.completedFuture(null) : taken.releaseAsync(this);
    }

    @Override
    public CompletableFuture<HeldLock> acquireAsync(Collection<String> keys, LockOptions options) {
        String[] fullKeys;
        try {
            fullKeys = fullKeys(keys);
            checkSupported(options);
        }
        catch (RuntimeException ex) {
            return CompletableFuture.failedFuture(ex);
        }
        CompletableFuture<HeldLock> result = new CompletableFuture<>();
        CompletableFuture<Taken> acquisition = take(fullKeys, options);
        result.whenComplete((held, failure) -> {
            if (failure instanceof CancellationException) {
                acquisition.cancel(false);
            }
        });
        acquisition.whenComplete((taken, failure) -> {
            if (failure != null) {
                result.completeExceptionally(unwrap(failure));
            }
            else if (taken.failedKey() != null) {
                result.completeExceptionally(
                        new LockAcquisitionException(taken.failedKey(), Duration.ofNanos(taken.waitNanos()), null));
            }
            else if (result.isDone()) {
                releasePartial(taken, taken.keys().length, LockCallOutcome.CANCELLED);
            }
            else {
                taken.watch(this);
                AsyncHeldLock held = new AsyncHeldLock(taken, options);
                if (!result.complete(held)) {
                    // cancelled meanwhile: the caller is gone
                    held.releaseAsync();
                }
            }
        });
        return result;
    }

    /** A {@link HeldLock} released once. */
    private final class AsyncHeldLock implements HeldLock {

        private final Taken taken;
        private final LockOptions options;
        private final CompletableFuture<Void> released = new CompletableFuture<>();
        private final java.util.concurrent.atomic.AtomicBoolean releasing = new java.util.concurrent.atomic.AtomicBoolean();

        AsyncHeldLock(Taken taken, LockOptions options) {
            this.taken = taken;
            this.options = options;
        }

        @Override
        public List<String> keys() {
            return List.of(taken.keys());
        }

        @Override
        public OptionalLong fencingToken() {
            long token = taken.handles()[0].fencingToken();
            return (token >= 0) ? OptionalLong.of(token) : OptionalLong.empty();
        }

        @Override
        public CompletableFuture<Void> releaseAsync() {
            if (releasing.compareAndSet(false, true)) {
                if (!releaseLater(taken, options)) {
                    taken.releaseAsync(DefaultLockTemplate.this).whenComplete((ignored, never) -> released.complete(null));
                }
                else {
                    released.complete(null);
                }
            }
            return released;
        }
    }

    // ---------------------------------------------------------------- the one acquisition path

    /**
     * Takes every key of {@code keys} (sorted, distinct) for one new owner, one after the other, within one wait. The
     * future never completes exceptionally for contention: a {@link Taken} names the key that could not be had, and
     * the keys taken before it have been released.
     */
    private CompletableFuture<Taken> take(String[] keys, LockOptions options) {
        long waitNanos = waitNanos(options);
        long leaseNanos = leaseNanos(options);
        LockOwner owner = LockOwner.next();
        long start = System.nanoTime();
        LockHandle[] handles = new LockHandle[keys.length];
        ObservationRegistry registry = observationRegistry;
        ActiveCall call = new ActiveCall(keys, handles, options, owner.id(), leaseNanos, start,
                startObservation(keys, options, registry), registry);
        active.add(call);
        Taken taken = new Taken(keys, handles, start, waitNanos, call);
        CompletableFuture<Taken> result = new CompletableFuture<>();
        takeFrom(0, taken, options, leaseNanos, owner, result);
        return result;
    }

    private void takeFrom(int index, Taken taken, LockOptions options, long leaseNanos, LockOwner owner,
            CompletableFuture<Taken> result) {
        String key = taken.keys()[index];
        // one wait for all keys: later keys get what is left of it, and "try once" stays "try once" for each
        long waitNanos = (taken.waitNanos() == 0) ? 0
                : Math.max(0, taken.waitNanos() - (System.nanoTime() - taken.start()));
        CompletableFuture<LockHandle> acquisition;
        try {
            acquisition = provider.acquire(new LockRequest(key, waitNanos, leaseNanos, options.fenced(), options.type(),
                    owner, options.permits()));
        }
        catch (IllegalArgumentException ex) {
            // a key or an option the backend refuses: the caller's mistake, not an outage
            releasePartial(taken, index, LockCallOutcome.ERROR)
                    .whenComplete((ignored, never) -> result.completeExceptionally(ex));
            return;
        }
        catch (RuntimeException ex) {
            failTaking(index, taken, key, ex, result);
            return;
        }
        // a caller that stops waiting (interrupted, cancelled) stops the backend's wait too: a backend left polling or
        // queued would take the key after the holder's release only to give it back, ahead of the live waiters
        result.whenComplete((ignored, never) -> {
            if (!acquisition.isDone()) {
                acquisition.cancel(false);
            }
        });
        acquisition.whenComplete((handle, failure) -> {
            if ((failure != null || handle == null) && result.isDone()) {
                // abandoned, and the caller has been told: only give back the keys taken before this one
                releasePartial(taken, index, LockCallOutcome.CANCELLED);
            }
            else if (failure != null) {
                failTaking(index, taken, key, unwrap(failure), result);
            }
            else if (handle == null) {
                notifyWaited(LockListener::onNotAcquired, key, taken.start(), null);
                Taken failed = taken.failedAt(key);
                // all or none: the caller hears "not acquired" once nothing of this call is held any more
                releasePartial(taken, index, LockCallOutcome.NOT_ACQUIRED)
                        .whenComplete((ignored, never) -> result.complete(failed));
            }
            else {
                taken.handles()[index] = handle;
                if (index + 1 == taken.keys().length) {
                    Taken acquired = taken.acquired();
                    taken.call().acquired(acquired.acquiredAt());
                    if (!result.complete(acquired)) {
                        // abandoned (interrupted, cancelled) while the last key was on its way
                        releasePartial(taken, index + 1, LockCallOutcome.CANCELLED);
                    }
                }
                else if (result.isDone()) {
                    // abandoned while taking: give back what was taken
                    releasePartial(taken, index + 1, LockCallOutcome.CANCELLED);
                }
                else {
                    takeFrom(index + 1, taken, options, leaseNanos, owner, result);
                }
            }
        });
    }

    private void failTaking(int index, Taken taken, String key, Throwable failure, CompletableFuture<Taken> result) {
        notifyWaited(LockListener::onNotAcquired, key, taken.start(), failure);
        // a closed key is an answer, not an outage: the caller gets it as it is
        Throwable reported = (failure instanceof LockKeyClosedException closed) ? closed
                : new LockBackendException(key, failure);
        releasePartial(taken, index, (reported instanceof LockKeyClosedException) ? LockCallOutcome.NOT_ACQUIRED
                : LockCallOutcome.ERROR).whenComplete((ignored, never) -> result.completeExceptionally(reported));
    }

    /**
     * Releases the first {@code count} handles of a call that could not take all its keys (or was abandoned); the
     * future completes, never exceptionally, when every release has answered, and the call has ended with
     * {@code outcome}.
     */
    private CompletableFuture<Void> releasePartial(Taken taken, int count, LockCallOutcome outcome) {
        CompletableFuture<?>[] releases = new CompletableFuture<?>[count];
        for (int i = 0; i < count; i++) {
            String key = taken.keys()[i];
            releases[i] = releaseOf(taken.handles()[i]).handle((released, failure) -> {
                if (failure != null) {
                    logger.warn("Could not release lock '" + key + "' after another key of the same call could not be "
                            + "taken; the backend keeps trying, and it expires by itself within its lease: " + failure);
                }
                return null;
            });
        }
        return CompletableFuture.allOf(releases).whenComplete((ignored, never) -> end(taken.call(), outcome, null));
    }

    // ---------------------------------------------------------------- release

    /**
     * Releases the locks of a call that has returned: at once, or after the minimum hold, or when the thread's
     * transaction completes. Never throws: the guarded code has finished, and its own outcome is what the caller sees.
     */
    private void releaseAfterCall(Taken taken, LockOptions options) {
        if (releaseAfterTransaction && TransactionBinding.bind(this, taken, options)) {
            return;
        }
        if (!releaseLater(taken, options)) {
            taken.releaseNow(this);
        }
    }

    /** Only loaded when spring-tx is on the class path. */
    private static final class TransactionBinding {

        /** Defers the release to the end of the thread's transaction, if one is active; returns whether it did. */
        static boolean bind(DefaultLockTemplate template, Taken taken, LockOptions options) {
            if (!TransactionSynchronizationManager.isSynchronizationActive()) {
                return false;
            }
            for (int i = 0; i < taken.keys().length; i++) {
                LockContext.defer(template.provider, taken.keys()[i], taken.handles()[i], options.type(),
                        options.permits());
            }
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void afterCompletion(int status) {
                    LockContext.undefer(taken.handles());
                    if (!template.releaseLater(taken, options)) {
                        taken.releaseNow(template);
                    }
                }
            });
            return true;
        }
    }

    /** Schedules the release when the minimum hold is not over yet; returns whether it did. */
    private boolean releaseLater(Taken taken, LockOptions options) {
        if (options.holdAtLeast() == null) {
            return false;
        }
        long remaining = options.holdAtLeast().toNanos() - (System.nanoTime() - taken.acquiredAt());
        if (remaining <= 0) {
            return false;
        }
        try {
            delayedReleases().schedule(() -> taken.releaseAsync(this), remaining, TimeUnit.NANOSECONDS);
        }
        catch (java.util.concurrent.RejectedExecutionException shuttingDown) {
            // the template is shutting down: release now rather than leave the lock renewed for nobody
            return false;
        }
        return true;
    }

    private ScheduledExecutorService delayedReleases() {
        ScheduledExecutorService executor = delayedReleases;
        if (executor == null) {
            synchronized (this) {
                executor = delayedReleases;
                if (executor == null) {
                    executor = Executors.newSingleThreadScheduledExecutor(task -> {
                        Thread thread = new Thread(task, "distlock-delayed-release");
                        thread.setDaemon(true);
                        return thread;
                    });
                    delayedReleases = executor;
                }
            }
        }
        return executor;
    }

    /** What one call took: its keys, their handles in the same order, when it started waiting and got them all. */
    record Taken(String[] keys, LockHandle[] handles, long start, long waitNanos, long acquiredAt, String failedKey,
            ActiveCall call) {

        Taken(String[] keys, LockHandle[] handles, long start, long waitNanos, ActiveCall call) {
            this(keys, handles, start, waitNanos, 0, null, call);
        }

        Taken failedAt(String key) {
            return new Taken(keys, handles, start, waitNanos, 0, key, call);
        }

        Taken acquired() {
            return new Taken(keys, handles, start, waitNanos, System.nanoTime(), null, call);
        }

        LockHandle handle(String key) {
            for (int i = 0; i < keys.length; i++) {
                if (keys[i].equals(key)) {
                    return handles[i];
                }
            }
            throw new IllegalStateException("not taken: " + key);
        }

        /** Reports the acquisitions and registers the lost-while-held reports. */
        void watch(DefaultLockTemplate template) {
            for (int i = 0; i < keys.length; i++) {
                String key = keys[i];
                template.notifyWaited(LockListener::onAcquired, key, start, null);
                handles[i].whenLost(reason -> template.reportLostWhileHeld(key, acquiredAt, reason));
            }
        }

        /** Releases every key, waiting for each answer (the caller's thread has nothing else to do). */
        void releaseNow(DefaultLockTemplate template) {
            for (int i = keys.length - 1; i >= 0; i--) {
                template.released(call, keys[i], handles[i], acquiredAt, releaseOutcome(handles[i]));
            }
        }

        /** Releases every key without blocking; the future completes when all have answered. */
        CompletableFuture<Void> releaseAsync(DefaultLockTemplate template) {
            CompletableFuture<?>[] releases = new CompletableFuture<?>[keys.length];
            for (int i = keys.length - 1; i >= 0; i--) {
                String key = keys[i];
                LockHandle handle = handles[i];
                releases[i] = releaseOf(handle).handle((released, failure) -> {
                    template.released(call, key, handle, acquiredAt, (failure != null) ? unwrap(failure) : released);
                    return null;
                });
            }
            return CompletableFuture.allOf(releases);
        }

        private static Object releaseOutcome(LockHandle handle) {
            try {
                return handle.release();
            }
            catch (RuntimeException ex) {
                return ex;
            }
        }
    }

    /** The handle's release, with a provider that throws instead of failing the future treated alike. */
    private static CompletableFuture<Boolean> releaseOf(LockHandle handle) {
        try {
            return handle.releaseAsync();
        }
        catch (RuntimeException ex) {
            return CompletableFuture.failedFuture(ex);
        }
    }

    /** Reports the outcome of one release: {@code Boolean} released or not, or the backend's failure. */
    private void released(ActiveCall call, String fullKey, LockHandle handle, long acquiredAt, Object outcome) {
        LockCallOutcome callOutcome = (outcome instanceof Throwable) ? LockCallOutcome.RELEASE_FAILED
                : (Boolean.TRUE.equals(outcome) && !handle.lostWhileHeld()) ? LockCallOutcome.RELEASED
                : LockCallOutcome.LEASE_LOST;
        try {
            report(fullKey, handle, acquiredAt, outcome);
        }
        finally {
            LockCallOutcome ended = call.keyReleased(callOutcome);
            if (ended != null) {
                end(call, ended, (outcome instanceof Throwable failure) ? failure : null);
            }
        }
    }

    private void report(String fullKey, LockHandle handle, long acquiredAt, Object outcome) {
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
    private void reportLostWhileHeld(String fullKey, long acquiredAt, String reason) {
        logger.warn("Lock '" + fullKey + "' was lost while its holder still runs, " + millisSince(acquiredAt)
                + " ms after it was acquired: " + reason + ". Another caller may take it now.");
        notifyHeld(LockListener::onLeaseLost, fullKey, acquiredAt, null);
    }

    // ---------------------------------------------------------------- calls in progress, observation

    /**
     * A started {@code distlock.lock} observation for a new call, or {@code null} when nothing observes or a handler
     * (or convention) failed to start it: the call then goes on unobserved, as it would without a registry.
     */
    private Observation startObservation(String[] keys, LockOptions options, ObservationRegistry registry) {
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
    private static Observation.Scope openScope(Observation observation, ObservationRegistry registry,
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
    private static void closeScope(Observation.Scope scope, ObservationRegistry registry, Observation.Scope previous,
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

    /** Ends a call once: it leaves the active set and its observation stops with {@code outcome}. */
    private void end(ActiveCall call, LockCallOutcome outcome, Throwable failure) {
        if (!call.end()) {
            return;
        }
        active.remove(call);
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

    /**
     * The lock calls in progress on this template right now, waiting or holding, one entry per key; a snapshot, in no
     * particular order. Nested calls that re-entered a held lock are not listed apart: their outer call holds it.
     */
    public List<ActiveLock> activeLocks() {
        List<ActiveLock> locks = new ArrayList<>();
        Instant now = Instant.now();
        long nowNanos = System.nanoTime();
        for (ActiveCall call : active) {
            long acquiredAt = call.acquiredAt;
            boolean held = acquiredAt != 0;
            long since = held ? acquiredAt : call.start;
            Duration duration = Duration.ofNanos(Math.max(0, nowNanos - since));
            Duration lease = (call.leaseNanos == 0) ? null : Duration.ofNanos(call.leaseNanos);
            Duration remaining = (!held || lease == null) ? null
                    : Duration.ofNanos(Math.max(0, call.leaseNanos - (nowNanos - acquiredAt)));
            for (int i = 0; i < call.keys.length; i++) {
                LockHandle handle = held ? call.handles[i] : null;
                long token = (handle != null) ? handle.fencingToken() : -1;
                locks.add(new ActiveLock(call.keys[i], call.options.type(), call.options.name(), call.thread,
                        call.owner, held, now.minus(duration), duration, lease, remaining, token));
            }
        }
        return locks;
    }

    /** How many keys are held through this template right now. */
    public int heldLockCount() {
        int held = 0;
        for (ActiveCall call : active) {
            if (call.acquiredAt != 0) {
                held += call.keys.length;
            }
        }
        return held;
    }

    /** How many calls are waiting for their locks right now. */
    public int waitingCallCount() {
        int waiting = 0;
        for (ActiveCall call : active) {
            if (call.acquiredAt == 0) {
                waiting++;
            }
        }
        return waiting;
    }

    // ---------------------------------------------------------------- keys, options, listeners

    @Override
    public long closeKey(String key, String reason) {
        Objects.requireNonNull(reason, "reason");
        return provider.closeKey(fullKey(key), reason);
    }

    @Override
    public void reopenKey(String key) {
        provider.reopenKey(fullKey(key));
    }

    @Override
    public String fullKey(String key) {
        if (key == null || key.isBlank()) {
            throw new IllegalArgumentException("Lock key must not be null or blank, was " + (key == null ? "null" : "'" + key + "'"));
        }
        return keyPrefix.concat(key);
    }

    /** The full keys, distinct, in their one global order; every key checked before anything is locked. */
    private String[] fullKeys(Collection<String> keys) {
        Objects.requireNonNull(keys, "keys");
        if (keys.isEmpty()) {
            throw new IllegalArgumentException("At least one lock key is needed, got none");
        }
        TreeSet<String> sorted = new TreeSet<>();
        for (String key : keys) {
            sorted.add(fullKey(key));
        }
        return sorted.toArray(String[]::new);
    }

    private static String[] missing(String[] keys, LockContext.Frame[] reentered, int count) {
        String[] missing = new String[count];
        int j = 0;
        for (int i = 0; i < keys.length; i++) {
            if (reentered[i] == null) {
                missing[j++] = keys[i];
            }
        }
        return missing;
    }

    private void checkSupported(LockOptions options) {
        Objects.requireNonNull(options, "options");
        if (!provider.supports(options.type(), options.fenced())) {
            throw new IllegalArgumentException("The lock backend (" + provider.getClass().getSimpleName() + ") cannot take "
                    + (options.fenced() ? "fenced " : "") + options.type() + " locks");
        }
        if (options.holdAtLeast() != null && options.leaseTime() == null && defaultLease != null) {
            // the annotation resolves the default lease into its options, so LockOptions' own rule refuses a minimum
            // hold longer than the lease at startup; a template call gets the same rule for the same options
            try {
                options.withLeaseTime(defaultLease);
            }
            catch (IllegalArgumentException ex) {
                throw new IllegalArgumentException(ex.getMessage() + ": the call names no leaseTime, so the configured "
                        + "default lease (distlock.lease-time) applies", ex);
            }
        }
        if (options.permits() > 1 && !provider.supportsPermits()) {
            throw new IllegalArgumentException("The lock backend (" + provider.getClass().getSimpleName() + ") cannot "
                    + "take locks with permits (permits = " + options.permits() + ")");
        }
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
        return (options.waitTime() != null) ? LockDurations.toNanos(options.waitTime()) : defaultWaitNanos;
    }

    private long leaseNanos(LockOptions options) {
        return (options.leaseTime() != null) ? LockDurations.toNanos(options.leaseTime()) : defaultLeaseNanos;
    }

    private static Throwable unwrap(Throwable failure) {
        return (failure instanceof CompletionException && failure.getCause() != null) ? failure.getCause() : failure;
    }

    private static long millisSince(long nanoTime) {
        return (System.nanoTime() - nanoTime) / 1_000_000;
    }

    /** Stops the scheduler of delayed releases (minimum hold); releases already due run first. */
    public void shutdown() {
        ScheduledExecutorService executor = delayedReleases;
        if (executor != null) {
            executor.shutdown();
        }
    }

    @Override
    public String toString() {
        return "DefaultLockTemplate[" + provider + ", prefix '" + keyPrefix + "', " + Arrays.toString(listeners) + "]";
    }
}

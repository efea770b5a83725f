package io.github.distlock;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

import io.github.distlock.observation.DefaultLockObservationConvention;
import io.github.distlock.observation.LockObservationConvention;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockProvider;
import io.micrometer.observation.ObservationRegistry;

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
 * starts waiting and removed when its last release has answered): as the {@link LockActivity} of this instance it
 * lists and counts them. With an {@link ObservationRegistry} ({@link #setObservationRegistry}) each call is a
 * {@code distlock.lock} observation over its wait and its hold.
 *
 * <p>A facade: each job is done by one package-private collaborator, and one object ({@code ActiveCall}) carries a
 * call from its first wait to its last release through all of them. {@code BlockingCalls} re-enters or takes the keys
 * of {@code execute}/{@code tryExecute} and runs the code under them; {@code AsyncCalls} does {@code executeAsync} and
 * {@code acquireAsync}; {@code LockAcquirer} is the one acquisition path (several keys in their global order, one
 * wait); {@code LockReleaser} releases at once, after the minimum hold or when the transaction completes;
 * {@code LockNotifier} tells listeners, the log and the observation; {@code CallRegistry} keeps the calls in progress.
 */
public class DefaultLockTemplate implements LockTemplate, LockActivity {

    private final LockProvider provider;
    private final String keyPrefix;
    /** The configured default lease, {@code null} for the watchdog: the lease of every call that names none. */
    private final Duration defaultLease;
    private final LockNotifier notifier;
    private final CallRegistry registry;
    private final LockReleaser releaser;
    private final BlockingCalls blockingCalls;
    private final AsyncCalls asyncCalls;

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
        this.defaultLease = (defaults.leaseTime() != null && !defaults.leaseTime().isZero()) ? defaults.leaseTime() : null;
        this.notifier = new LockNotifier(listeners);
        this.registry = new CallRegistry();
        // the backend is the scope of this template's LockContext frames: templates on other backends never re-enter
        this.releaser = new LockReleaser(provider, notifier, registry, releaseAfterTransaction);
        LockAcquirer acquirer = new LockAcquirer(provider, defaults, notifier, registry, releaser);
        this.blockingCalls = new BlockingCalls(provider, acquirer, releaser);
        this.asyncCalls = new AsyncCalls(provider, acquirer, releaser);
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
        notifier.setObservationRegistry(observationRegistry);
    }

    /** Replaces {@link DefaultLockObservationConvention}; {@code null} restores it. */
    public void setObservationConvention(LockObservationConvention observationConvention) {
        notifier.setObservationConvention(observationConvention);
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
        return blockingCalls.run(keys, options, callback, throwWhenNotAcquired);
    }

    // ---------------------------------------------------------------- asynchronous calls

    @Override
    public <T> CompletableFuture<T> executeAsync(Collection<String> keys, LockOptions options,
            Supplier<? extends CompletionStage<T>> action) {
        Objects.requireNonNull(action, "action");
        String[] fullKeys = fullKeys(keys);
        checkSupported(options);
        if (options.leaseLostPolicy() == LeaseLostPolicy.INTERRUPT) {
            throw new IllegalArgumentException("executeAsync cannot use LeaseLostPolicy.INTERRUPT: the action's work "
                    + "runs on threads the lock does not know once the action has returned; use CANCEL, which "
                    + "cancels the stage the action returned");
        }
        return asyncCalls.executeAsync(fullKeys, options, action);
    }

    @Override
    public CompletableFuture<HeldLock> acquireAsync(Collection<String> keys, LockOptions options) {
        String[] fullKeys;
        try {
            fullKeys = fullKeys(keys);
            checkSupported(options);
            if (options.leaseLostPolicy() != LeaseLostPolicy.REPORT) {
                throw new IllegalArgumentException("acquireAsync cannot use LeaseLostPolicy."
                        + options.leaseLostPolicy() + ": it runs no code of its own to stop; register "
                        + "HeldLock.whenLost to stop your work when the lock is lost");
            }
        }
        catch (RuntimeException ex) {
            return CompletableFuture.failedFuture(ex);
        }
        return asyncCalls.acquireAsync(fullKeys, options);
    }

    // ---------------------------------------------------------------- calls in progress

    /**
     * The lock calls in progress on this template right now, waiting or holding, one entry per key; a snapshot, in no
     * particular order. Nested calls that re-entered a held lock are not listed apart: their outer call holds it.
     */
    @Override
    public List<ActiveLock> activeLocks() {
        return registry.activeLocks();
    }

    /** How many keys are held through this template right now. */
    @Override
    public int heldLockCount() {
        return registry.heldLockCount();
    }

    /** How many calls are waiting for their locks right now. */
    @Override
    public int waitingCallCount() {
        return registry.waitingCallCount();
    }

    // ---------------------------------------------------------------- keys, options

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

    /** Stops the scheduler of delayed releases (minimum hold); releases already due run first. */
    public void shutdown() {
        releaser.shutdown();
    }

    @Override
    public String toString() {
        return "DefaultLockTemplate[" + provider + ", prefix '" + keyPrefix + "', " + notifier + "]";
    }
}

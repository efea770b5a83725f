package io.github.distlock.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockKeyClosedException;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.jspecify.annotations.Nullable;

/**
 * A {@link LockProvider} that keeps its locks in this JVM, for users' tests that should run without Redis. It has the
 * semantics the {@link LockProviderContractTest contract suite} checks (and passes it):
 * <ul>
 * <li>one owner per request ({@link io.github.distlock.spi.LockOwner}): a second request for a held key waits or fails, whoever sends it;</li>
 * <li>a fixed lease expires by the clock ({@link System#nanoTime()}), whether or not the holder still runs;</li>
 * <li>a watchdog lease ({@link LockRequest#watchdog()}) lasts while its holder lives: in one JVM renewal cannot fail, so
 * it only ends by release, by {@link #expire(String)}, or one watchdog timeout after {@link #abandon(LockHandle)};</li>
 * <li>fencing tokens that grow per key across holders, for every type but {@link LockType#READ};</li>
 * <li>every {@link LockType}: {@code REENTRANT} (waiters in no promised order), {@code FAIR} (waiters in arrival order;
 * a newcomer never overtakes a queued {@code FAIR} waiter), {@code READ} (shared) and {@code WRITE} (exclusive); locks
 * of one key exclude each other across types, as {@link LockType} describes, and readers may join while a writer
 * waits, as on Redis;</li>
 * <li>a waiter whose future is cancelled leaves the queue at once and never ends up holding the lock;</li>
 * <li>a queued waiter's future is completed on a thread of the provider, as a real backend completes it on its own,
 * never on the thread whose release granted it (whose lock calls its continuations would otherwise run inside).</li>
 * </ul>
 *
 * <p>Use it as the {@link LockProvider} bean of a test (Spring Boot's auto-configuration then builds the template on
 * it), or build a {@link io.github.distlock.DefaultLockTemplate} on it by hand. {@link #lockedKeys()} and
 * {@link #isLocked(String)} let a test check what is held; {@link #expire(String)} and {@link #abandon(LockHandle)}
 * simulate a lock taken away behind its holder's back and a holder that died; {@link #onKey(String)} and
 * {@link #onEveryKey()} inject the faults of a real backend ({@link LockFaults}: a lost lease, an outage, a slow
 * backend), so that a test can take the application's own failure handling through them.
 *
 * <pre>{@code
 * @TestConfiguration
 * class InMemoryLocks {
 *     @Bean
 *     InMemoryLockProvider lockProvider() {
 *         return new InMemoryLockProvider();
 *     }
 * }
 * }</pre>
 *
 * <p>Thread-safe. Its threads (a timer, callbacks) are daemons; {@link #close()} stops them and fails the
 * acquisitions still waiting.
 */
public class InMemoryLockProvider implements LockProvider, AutoCloseable {

    /** Redisson's default, so that a test sees the same timing as production unless it asks for another. */
    public static final Duration DEFAULT_WATCHDOG_TIMEOUT = Duration.ofSeconds(30);

    private final InMemoryLockTable table;
    /** Acquisitions held back by {@link LockFaults#delayAcquisitions}: failed by {@link #close()} like the waiters. */
    private final Set<CompletableFuture<@Nullable LockHandle>> delayedAcquisitions = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    /** A provider whose abandoned watchdog locks expire after {@link #DEFAULT_WATCHDOG_TIMEOUT}. */
    public InMemoryLockProvider() {
        this(DEFAULT_WATCHDOG_TIMEOUT);
    }

    /**
     * @param watchdogTimeout how long a watchdog lock outlives a holder that {@linkplain #abandon(LockHandle) died};
     * at least one millisecond, at most {@link LockDurations#MAX_WATCHDOG_TIMEOUT}
     */
    public InMemoryLockProvider(Duration watchdogTimeout) {
        this.table = new InMemoryLockTable(LockDurations.checkedBetween("watchdogTimeout", watchdogTimeout,
                Duration.ofMillis(1), LockDurations.MAX_WATCHDOG_TIMEOUT).toNanos());
    }

    /**
     * Permits ({@code permits > 1}): a semaphore kept apart from the lock of the same key, as on Redis
     * ({@code distlock_permits:{<key>}}); {@link #isLocked}, {@link #waiting} and {@link #expire} take that key for it.
     */
    @Override
    public boolean supportsPermits() {
        return true;
    }

    /** Where a request's state lives: the key, or {@code <key>:permits} for a semaphore. */
    private static String stateKey(LockRequest request) {
        return (request.permits() > 1) ? "distlock_permits:{" + request.key() + "}" : request.key();
    }

    /** Every type, fenced or not, except fenced {@link LockType#READ} (readers take no token, as on Redis). */
    @Override
    public boolean supports(LockType type, boolean fenced) {
        return !fenced || type != LockType.READ;
    }

    @Override
    public CompletableFuture<@Nullable LockHandle> acquire(LockRequest request) {
        if (!supports(request.type(), request.fenced())) {
            throw new IllegalArgumentException("In-memory locks of type READ cannot be fenced: readers take no token");
        }
        if (request.permits() > 1 && (request.type() != LockType.REENTRANT || request.fenced())) {
            throw new IllegalArgumentException("permits = " + request.permits() + " cannot be combined with "
                    + (request.fenced() ? "fencing" : "type " + request.type()) + ": permits are REENTRANT and unfenced");
        }
        if (closed) {
            return CompletableFuture.failedFuture(new IllegalStateException("InMemoryLockProvider is closed"));
        }
        InMemoryFaults.Acquisition fault = table.faults.acquisition(request.key());
        if (fault.delayNanos() > 0) {
            return delayed(request, fault);
        }
        if (fault.failure() != null) {
            return CompletableFuture.failedFuture(fault.failure());
        }
        return take(request);
    }

    /** The acquisition itself, once past the faults: granted now, queued, or answered "not acquired". */
    private CompletableFuture<@Nullable LockHandle> take(LockRequest request) {
        CompletableFuture<LockHandle> future = new CompletableFuture<>();
        List<Runnable> afterwards = new ArrayList<>();
        table.mutex.lock();
        try {
            String closedFor = table.closedKeys.get(request.key());
            if (closedFor != null) {
                return CompletableFuture.failedFuture(new LockKeyClosedException(request.key(), closedFor));
            }
            long now = System.nanoTime();
            InMemoryKeyState state = table.keys.computeIfAbsent(stateKey(request), InMemoryKeyState::new);
            table.leases.purgeExpired(state, now, afterwards);
            if (state.grantable(request.type(), request.permits(), null)) {
                InMemoryHold hold = table.leases.take(state, request, now);
                afterwards.add(() -> InMemoryGrant.complete(future, hold));
            }
            else if (request.waitNanos() == 0) {
                afterwards.add(() -> future.complete(null));
                table.forgetIfIdle(state);
            }
            else {
                InMemoryWaiter waiter = new InMemoryWaiter(request, future);
                state.waiters.add(waiter);
                waiter.timeout = table.timer.schedule(() -> table.timeOut(state, waiter), request.waitNanos(),
                        TimeUnit.NANOSECONDS);
            }
        }
        finally {
            table.mutex.unlock();
        }
        InMemoryGrant.runAfterwards(afterwards).join();
        // a caller that stops waiting leaves the queue now, not when its wait would have run out
        future.whenComplete((handle, failure) -> {
            if (future.isCancelled()) {
                table.leaveQueue(stateKey(request), future);
            }
        });
        return future;
    }

    /**
     * An acquisition that reaches the table {@code fault.delayNanos()} late, out of its wait: one whose wait ends first
     * is answered "not acquired" then; a cancelled one never reaches it.
     */
    private CompletableFuture<@Nullable LockHandle> delayed(LockRequest request, InMemoryFaults.Acquisition fault) {
        CompletableFuture<@Nullable LockHandle> answer = new CompletableFuture<>();
        delayedAcquisitions.add(answer);
        answer.whenComplete((handle, failure) -> delayedAcquisitions.remove(answer));
        long delay = fault.delayNanos();
        long wait = request.waitNanos();
        if (wait > 0 && delay >= wait) {
            // the caller would give up before the backend answers: it hears "not acquired" when its wait ends
            later(answer, wait, () -> answer.complete(null));
            return answer;
        }
        LockRequest late = new LockRequest(request.key(), (wait == 0) ? 0 : wait - delay, request.leaseNanos(),
                request.fenced(), request.type(), request.owner(), request.permits());
        later(answer, delay, () -> {
            if (answer.isDone()) {
                return;
            }
            if (fault.failure() != null) {
                answer.completeExceptionally(fault.failure());
                return;
            }
            CompletableFuture<@Nullable LockHandle> taking = take(late);
            answer.whenComplete((handle, failure) -> {
                if (answer.isCancelled()) {
                    taking.cancel(false);
                }
            });
            taking.whenComplete((handle, failure) -> {
                if (failure != null) {
                    answer.completeExceptionally(failure);
                }
                else if (!answer.complete(handle) && handle != null) {
                    // the caller stopped waiting meanwhile: nobody will release it
                    handle.releaseAsync();
                }
            });
        });
        return answer;
    }

    /** Runs {@code task} off the timer after {@code nanos}; closed meanwhile, {@code answer} fails as close() says. */
    private void later(CompletableFuture<@Nullable LockHandle> answer, long nanos, Runnable task) {
        try {
            table.timer.schedule(() -> table.runOffTimer(List.of(task)), nanos, TimeUnit.NANOSECONDS);
        }
        catch (java.util.concurrent.RejectedExecutionException closing) {
            answer.completeExceptionally(new IllegalStateException("InMemoryLockProvider closed while an acquisition "
                    + "was delayed (LockFaults.delayAcquisitions)"));
        }
    }

    /**
     * Closes {@code key} for every type (on Redis only {@code FAIR} locks can be closed): its waiters fail now, and every
     * acquisition until {@link #reopenKey} fails at once, with {@link LockKeyClosedException}.
     */
    @Override
    public long closeKey(String key, String reason) {
        List<InMemoryWaiter> told = new ArrayList<>();
        table.mutex.lock();
        try {
            table.closedKeys.put(key, reason);
            InMemoryKeyState state = table.keys.get(key);
            if (state != null) {
                for (InMemoryWaiter waiter : state.waiters) {
                    if (!waiter.future.isDone()) {
                        told.add(waiter);
                    }
                    if (waiter.timeout != null) {
                        waiter.timeout.cancel(false);
                    }
                }
                state.waiters.clear();
                table.forgetIfIdle(state);
            }
        }
        finally {
            table.mutex.unlock();
        }
        told.forEach(waiter -> waiter.future.completeExceptionally(new LockKeyClosedException(key, reason)));
        return told.size();
    }

    @Override
    public void reopenKey(String key) {
        table.mutex.lock();
        try {
            table.closedKeys.remove(key);
        }
        finally {
            table.mutex.unlock();
        }
    }

    // ---------------------------------------------------------------- for tests: look and interfere

    /** Whether any owner holds a lock of {@code key} (the full key, prefix included) right now. */
    public boolean isLocked(String key) {
        return lockedKeys().contains(key);
    }

    /** The keys held right now, sorted: empty after a test that released everything it took. */
    public Set<String> lockedKeys() {
        List<Runnable> afterwards = new ArrayList<>();
        Set<String> locked = new TreeSet<>();
        table.mutex.lock();
        try {
            locked.addAll(liveKeys(afterwards));
        }
        finally {
            table.mutex.unlock();
        }
        InMemoryGrant.runAfterwards(afterwards).join();
        return locked;
    }

    /** How many acquisitions are waiting for {@code key} right now. */
    public int waiting(String key) {
        table.mutex.lock();
        try {
            InMemoryKeyState state = table.keys.get(key);
            return (state != null) ? (int) state.waiters.stream().filter(waiter -> !waiter.future.isDone()).count() : 0;
        }
        finally {
            table.mutex.unlock();
        }
    }

    /**
     * Takes every lock of {@code key} away from its holders, as an operator deleting the key or a failover that lost it
     * would: the next waiter gets it, each holder's {@link LockHandle#whenLost} callback is told, and their releases
     * answer {@code false}.
     *
     * @return whether anything was held
     */
    public boolean expire(String key) {
        return takeAway(List.of(key), "its lock was taken away (InMemoryLockProvider.expire)") > 0;
    }

    /** {@link LockFaults#loseLease()}: the leases of {@code key} (lock and semaphore), or of every key when null. */
    int loseLeases(@Nullable String key) {
        List<String> stateKeys;
        if (key != null) {
            stateKeys = List.of(key, "distlock_permits:{" + key + "}");
        }
        else {
            table.mutex.lock();
            try {
                stateKeys = List.copyOf(table.keys.keySet());
            }
            finally {
                table.mutex.unlock();
            }
        }
        String toldBy = (key != null) ? "onKey(\"" + key + "\")" : "onEveryKey()";
        return takeAway(stateKeys, "its lease was lost: the lock backend no longer has it (simulated by "
                + "InMemoryLockProvider." + toldBy + ".loseLease())");
    }

    /** Takes every lock of the states {@code stateKeys} away from its holders; returns how many lost theirs. */
    private int takeAway(List<String> stateKeys, String reason) {
        List<Runnable> afterwards = new ArrayList<>();
        List<InMemoryHold> taken = new ArrayList<>();
        table.mutex.lock();
        try {
            long now = System.nanoTime();
            for (String stateKey : stateKeys) {
                InMemoryKeyState state = table.keys.get(stateKey);
                if (state == null) {
                    continue;
                }
                // a lease that ran out by the clock is not lost now: it was gone already
                table.leases.purgeExpired(state, now, afterwards);
                for (InMemoryHold hold : state.holds) {
                    hold.held = false;
                    hold.handle.lostReason = reason;
                    if (hold.expiry != null) {
                        hold.expiry.cancel(false);
                    }
                    taken.add(hold);
                }
                state.holds.clear();
                table.grantWaiters(state, now, afterwards);
                table.forgetIfIdle(state);
            }
        }
        finally {
            table.mutex.unlock();
        }
        InMemoryGrant.runAfterwards(afterwards).join();
        taken.forEach(hold -> hold.handle.fireLost());
        return taken.size();
    }

    /** The keys held now, their expired leases purged first; under the mutex. */
    private List<String> liveKeys(List<Runnable> afterwards) {
        long now = System.nanoTime();
        List<String> live = new ArrayList<>();
        for (InMemoryKeyState state : List.copyOf(table.keys.values())) {
            table.leases.purgeExpired(state, now, afterwards);
            if (!state.holds.isEmpty()) {
                live.add(state.key);
            }
        }
        return live;
    }

    /**
     * For {@link LockRecorder}: what the calling thread, which runs under {@code heldKeys}, holds of this provider, and
     * every key the provider holds; under the mutex, so that the two agree.
     */
    LockRecorder.Recording recordHeld(String thread, List<String> heldKeys) {
        List<RecordedLock> held = new ArrayList<>();
        List<Runnable> afterwards = new ArrayList<>();
        Set<String> providerKeys = new TreeSet<>();
        table.mutex.lock();
        try {
            providerKeys.addAll(liveKeys(afterwards));
            for (String key : heldKeys) {
                long token = io.github.distlock.LockContext.fencingToken(key).orElse(-1);
                held.add(recorded(key, token));
            }
        }
        finally {
            table.mutex.unlock();
        }
        InMemoryGrant.runAfterwards(afterwards).join();
        return new LockRecorder.Recording(thread, List.copyOf(held), providerKeys);
    }

    /** The hold of {@code key} a thread runs under, by its token when fenced; under the mutex. */
    private RecordedLock recorded(String key, long token) {
        for (String stateKey : List.of(key, "distlock_permits:{" + key + "}")) {
            InMemoryKeyState state = table.keys.get(stateKey);
            if (state == null) {
                continue;
            }
            for (InMemoryHold hold : state.holds) {
                if (token < 0 || hold.handle.fencingToken() == token) {
                    return new RecordedLock(key, hold.type, hold.permits, token);
                }
            }
        }
        return new RecordedLock(key, null, 1, token);
    }

    // ---------------------------------------------------------------- for tests: faults

    /**
     * The faults to inject for {@code key}: a lost lease, failed acquisitions or releases, slow acquisitions. See
     * {@link LockFaults}.
     *
     * @param key the full key, prefix included ({@code lock:order:7})
     * @throws IllegalArgumentException when {@code key} is null or blank
     */
    public LockFaults onKey(String key) {
        if (key == null || key.isBlank()) {
            throw new IllegalArgumentException("InMemoryLockProvider.onKey(key): the key must be a full lock key, "
                    + "prefix included (such as lock:order:7), was " + ((key == null) ? "null" : "'" + key + "'"));
        }
        return new LockFaults(this, table.faults, key);
    }

    /** The faults to inject for every key (a key's own faults apply first). See {@link LockFaults}. */
    public LockFaults onEveryKey() {
        return new LockFaults(this, table.faults, null);
    }

    /**
     * Removes every fault given through {@link #onKey} and {@link #onEveryKey}; locks held stay held. In a Spring test
     * this happens after each test method, for every {@code InMemoryLockProvider} bean of the context.
     */
    public void resetFaults() {
        table.faults.resetAll();
    }

    /**
     * Acts as if the process holding {@code handle} died: a watchdog lock stops being renewed and expires one watchdog
     * timeout from now; a fixed lease runs out as it would have. The handle can still be released (a test that
     * abandons a lock usually doesn't).
     *
     * @throws IllegalArgumentException when {@code handle} did not come from this provider
     */
    public void abandon(LockHandle handle) {
        if (!(handle instanceof InMemoryHandle inMemory) || inMemory.hold().table != table) {
            throw new IllegalArgumentException("Not a lock of this InMemoryLockProvider: " + handle);
        }
        InMemoryHold hold = inMemory.hold();
        table.mutex.lock();
        try {
            table.leases.abandon(hold);
        }
        finally {
            table.mutex.unlock();
        }
    }

    /** Stops the timers; acquisitions still waiting fail with {@link IllegalStateException}. Held locks stay held. */
    @Override
    public void close() {
        List<InMemoryWaiter> waiting = new ArrayList<>();
        table.mutex.lock();
        try {
            closed = true;
            table.keys.values().forEach(state -> waiting.addAll(state.waiters));
            table.keys.values().forEach(state -> state.waiters.clear());
        }
        finally {
            table.mutex.unlock();
        }
        table.timer.shutdownNow();
        table.callbacks.shutdownNow();
        for (CompletableFuture<@Nullable LockHandle> delayed : List.copyOf(delayedAcquisitions)) {
            delayed.completeExceptionally(new IllegalStateException("InMemoryLockProvider closed while an acquisition "
                    + "was delayed (LockFaults.delayAcquisitions)"));
        }
        waiting.forEach(waiter -> waiter.future.completeExceptionally(
                new IllegalStateException("InMemoryLockProvider closed while waiting for '" + waiter.request.key() + "'")));
    }

    @Override
    public String toString() {
        return "InMemoryLockProvider[locked " + lockedKeys() + ", faults " + table.faults.describe() + "]";
    }
}

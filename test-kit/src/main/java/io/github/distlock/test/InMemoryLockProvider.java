package io.github.distlock.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
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
 * simulate a lock taken away behind its holder's back and a holder that died.
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
            long now = System.nanoTime();
            for (InMemoryKeyState state : List.copyOf(table.keys.values())) {
                table.leases.purgeExpired(state, now, afterwards);
                if (!state.holds.isEmpty()) {
                    locked.add(state.key);
                }
            }
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
        List<Runnable> afterwards = new ArrayList<>();
        List<InMemoryHold> taken = new ArrayList<>();
        table.mutex.lock();
        try {
            InMemoryKeyState state = table.keys.get(key);
            if (state == null) {
                return false;
            }
            for (InMemoryHold hold : state.holds) {
                hold.held = false;
                hold.handle.lostReason = "its lock was taken away (InMemoryLockProvider.expire)";
                if (hold.expiry != null) {
                    hold.expiry.cancel(false);
                }
                taken.add(hold);
            }
            state.holds.clear();
            table.grantWaiters(state, System.nanoTime(), afterwards);
            table.forgetIfIdle(state);
        }
        finally {
            table.mutex.unlock();
        }
        InMemoryGrant.runAfterwards(afterwards).join();
        taken.forEach(hold -> hold.handle.fireLost());
        return !taken.isEmpty();
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
        waiting.forEach(waiter -> waiter.future.completeExceptionally(
                new IllegalStateException("InMemoryLockProvider closed while waiting for '" + waiter.request.key() + "'")));
    }

    @Override
    public String toString() {
        return "InMemoryLockProvider[locked " + lockedKeys() + "]";
    }
}

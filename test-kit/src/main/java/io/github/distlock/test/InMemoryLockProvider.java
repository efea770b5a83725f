package io.github.distlock.test;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

import io.github.distlock.LockKeyClosedException;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.jspecify.annotations.Nullable;

/**
 * A {@link LockProvider} that keeps its locks in this JVM, for users' tests that should run without Redis. It has the
 * semantics the {@link LockProviderContractTest contract suite} checks (and passes it):
 * <ul>
 * <li>one owner per request ({@link LockOwner}): a second request for a held key waits or fails, whoever sends it;</li>
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

    /** A watchdog hold that nobody abandoned never expires: its deadline is this far away (≈ 146 years). */
    private static final long NEVER = Long.MAX_VALUE / 2;

    private final long watchdogNanos;
    /**
     * One lock for all state: the provider is for tests, where clarity beats throughput, and one lock makes every
     * decision (grant, expiry, release, timeout, cancellation) trivially atomic. Futures are completed only after it
     * is unlocked, so that callers' continuations (which may acquire again) never run inside it.
     */
    private final ReentrantLock mutex = new ReentrantLock();
    private final Map<String, KeyState> keys = new HashMap<>();
    /** Last fencing token per key; outlives the key's state so that tokens keep growing after every release. */
    private final Map<String, Long> tokens = new HashMap<>();
    /** Keys closed by {@link #closeKey}, with their reason. */
    private final Map<String, String> closedKeys = new HashMap<>();
    private final ScheduledThreadPoolExecutor timer;
    /**
     * Loss reports, the completions the timer causes and every grant to a queued waiter run here, never on the timer
     * nor on the thread whose release (or cancellation, or expiry) made the grant: see {@link Grant}. A callback that
     * blocks must not hold up expiries or wait timeouts. Daemon threads, started on demand and gone when idle; stopped
     * by {@link #close()}.
     */
    private final ExecutorService callbacks;
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
        this.watchdogNanos = LockDurations.checkedBetween("watchdogTimeout", watchdogTimeout, Duration.ofMillis(1),
                LockDurations.MAX_WATCHDOG_TIMEOUT).toNanos();
        this.timer = new ScheduledThreadPoolExecutor(1, task -> daemon(task, "distlock-in-memory-timer"));
        // released and answered waiters cancel their timers: don't keep thousands of dead tasks queued
        this.timer.setRemoveOnCancelPolicy(true);
        this.callbacks = Executors.newCachedThreadPool(task -> daemon(task, "distlock-in-memory-callback"));
    }

    private static Thread daemon(Runnable task, String name) {
        Thread thread = new Thread(task, name);
        thread.setDaemon(true);
        return thread;
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
        mutex.lock();
        try {
            String closedFor = closedKeys.get(request.key());
            if (closedFor != null) {
                return CompletableFuture.failedFuture(new LockKeyClosedException(request.key(), closedFor));
            }
            long now = System.nanoTime();
            KeyState state = keys.computeIfAbsent(stateKey(request), KeyState::new);
            purgeExpired(state, now, afterwards);
            if (grantable(state, request.type(), request.permits(), null)) {
                Hold hold = take(state, request, now);
                afterwards.add(() -> complete(future, hold));
            }
            else if (request.waitNanos() == 0) {
                afterwards.add(() -> future.complete(null));
                forgetIfIdle(state);
            }
            else {
                Waiter waiter = new Waiter(request, future);
                state.waiters.add(waiter);
                waiter.timeout = timer.schedule(() -> timeOut(state, waiter), request.waitNanos(), TimeUnit.NANOSECONDS);
            }
        }
        finally {
            mutex.unlock();
        }
        runAfterwards(afterwards).join();
        // a caller that stops waiting leaves the queue now, not when its wait would have run out
        future.whenComplete((handle, failure) -> {
            if (future.isCancelled()) {
                leaveQueue(stateKey(request), future);
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
        List<Waiter> told = new ArrayList<>();
        mutex.lock();
        try {
            closedKeys.put(key, reason);
            KeyState state = keys.get(key);
            if (state != null) {
                for (Waiter waiter : state.waiters) {
                    if (!waiter.future.isDone()) {
                        told.add(waiter);
                    }
                    if (waiter.timeout != null) {
                        waiter.timeout.cancel(false);
                    }
                }
                state.waiters.clear();
                forgetIfIdle(state);
            }
        }
        finally {
            mutex.unlock();
        }
        told.forEach(waiter -> waiter.future.completeExceptionally(new LockKeyClosedException(key, reason)));
        return told.size();
    }

    @Override
    public void reopenKey(String key) {
        mutex.lock();
        try {
            closedKeys.remove(key);
        }
        finally {
            mutex.unlock();
        }
    }

    /**
     * A grant to a queued waiter, run from {@code afterwards}: hands {@code hold} over on a callback thread, and
     * {@link #delivered} completes once it has (the waiter's future completed, and with it the continuations that run
     * where it is completed).
     *
     * <p>Why another thread: another caller's release (or cancellation, or expiry) made the grant, and completed on
     * that caller's thread, the waiter's continuations would run inside that caller's lock calls and re-enter its
     * other locks through {@link io.github.distlock.LockContext} (which re-enters per thread) while another owner holds
     * them. Real backends complete on their own threads; so does this one. Only a request granted at once, in
     * {@link #acquire}, is completed on its own caller's thread.
     *
     * <p>Why {@code delivered}: a release (and the other calls that grant) still answers only once its grants have been
     * handed over, as when it ran them itself, so a test that has released sees the next holder told. The price, as
     * before: a waiter's continuation that blocks holds up the release that granted it. Keep continuations short and
     * non-blocking, as {@link io.github.distlock.LockTemplate#acquireAsync} asks.
     */
    private final class Grant implements Runnable {

        private final CompletableFuture<LockHandle> future;
        private final Hold hold;
        final CompletableFuture<Void> delivered = new CompletableFuture<>();

        Grant(CompletableFuture<LockHandle> future, Hold hold) {
            this.future = future;
            this.hold = hold;
        }

        @Override
        public void run() {
            try {
                callbacks.execute(this::deliver);
            }
            catch (java.util.concurrent.RejectedExecutionException closed) {
                // closed meanwhile (its waiters were failed then): answer here rather than leave the hold to nobody
                deliver();
            }
        }

        private void deliver() {
            try {
                complete(future, hold);
            }
            finally {
                delivered.complete(null);
            }
        }
    }

    /**
     * Runs what was decided under the mutex, outside it; the future completes when every {@link Grant} among it has
     * been handed over.
     */
    private static CompletableFuture<Void> runAfterwards(List<Runnable> afterwards) {
        afterwards.forEach(Runnable::run);
        CompletableFuture<?>[] grants = afterwards.stream().filter(Grant.class::isInstance)
                .map(grant -> ((Grant) grant).delivered).toArray(CompletableFuture<?>[]::new);
        return (grants.length == 0) ? CompletableFuture.completedFuture(null) : CompletableFuture.allOf(grants);
    }

    /** Hands {@code hold} to its caller, or gives it back when the caller stopped waiting (cancelled) meanwhile. */
    private void complete(CompletableFuture<LockHandle> future, Hold hold) {
        if (!future.complete(hold.handle)) {
            hold.handle.releaseAsync();
        }
    }

    /**
     * Whether a lock of {@code type} can be granted now: nothing held, or only readers and a reader asks; and, for a
     * {@code FAIR} request, no live {@code FAIR} waiter queued before {@code self} (the request itself when queued).
     */
    private static boolean grantable(KeyState state, LockType type, int permits, Waiter self) {
        if (permits > 1) {
            // a semaphore's state holds only its permits (its own key, as on Redis); callers that disagree on N are
            // held to the smallest N among them and the holders, so no holder's "at most N" is broken
            int limit = permits;
            for (Hold hold : state.holds) {
                limit = Math.min(limit, hold.permits);
            }
            return state.holds.size() < limit;
        }
        boolean compatible = state.holds.isEmpty()
                || (type == LockType.READ && state.holds.stream().allMatch(hold -> hold.type == LockType.READ));
        if (!compatible || type != LockType.FAIR) {
            return compatible;
        }
        for (Waiter waiter : state.waiters) {
            if (waiter == self) {
                return true;
            }
            if (waiter.request.type() == LockType.FAIR && !waiter.future.isDone()) {
                return false;
            }
        }
        return true;
    }

    private Hold take(KeyState state, LockRequest request, long now) {
        long expiresAt = request.watchdog() ? now + NEVER : LockDurations.deadline(now, request.leaseNanos());
        Hold hold = new Hold(state.key, request.owner(), request.type(), request.watchdog(), expiresAt);
        hold.permits = request.permits();
        if (request.fenced()) {
            hold.handle.token = nextToken(state.key);
        }
        state.holds.add(hold);
        if (!request.watchdog()) {
            hold.expiry = timer.schedule(() -> expireDue(state.key), request.leaseNanos(), TimeUnit.NANOSECONDS);
        }
        return hold;
    }

    private long nextToken(String key) {
        return tokens.merge(key, 1L, Long::sum);
    }

    /** Grants the waiters that can hold now, in queue order; a blocked {@code FAIR} waiter blocks later ones. */
    private void grantWaiters(KeyState state, long now, List<Runnable> afterwards) {
        for (Iterator<Waiter> it = state.waiters.iterator(); it.hasNext();) {
            Waiter waiter = it.next();
            if (waiter.future.isDone()) {
                it.remove();
                continue;
            }
            if (grantable(state, waiter.request.type(), waiter.request.permits(), waiter)) {
                it.remove();
                waiter.timeout.cancel(false);
                Hold hold = take(state, waiter.request, now);
                afterwards.add(new Grant(waiter.future, hold));
            }
        }
    }

    /** Drops holds whose lease has run out; {@code afterwards} collects what must happen outside the mutex. */
    private void purgeExpired(KeyState state, long now, List<Runnable> afterwards) {
        boolean freed = false;
        for (Iterator<Hold> it = state.holds.iterator(); it.hasNext();) {
            Hold hold = it.next();
            if (hold.expiresAt - now <= 0) {
                it.remove();
                hold.held = false;
                freed = true;
            }
        }
        if (freed) {
            grantWaiters(state, now, afterwards);
        }
    }

    private void expireDue(String key) {
        List<Runnable> afterwards = new ArrayList<>();
        mutex.lock();
        try {
            KeyState state = keys.get(key);
            if (state != null) {
                purgeExpired(state, System.nanoTime(), afterwards);
                forgetIfIdle(state);
            }
        }
        finally {
            mutex.unlock();
        }
        runOffTimer(afterwards);
    }

    private void timeOut(KeyState state, Waiter waiter) {
        List<Runnable> afterwards = new ArrayList<>();
        mutex.lock();
        try {
            if (!state.waiters.remove(waiter)) {
                return;
            }
            afterwards.add(() -> waiter.future.complete(null));
            // its leaving may unblock FAIR waiters queued behind it (a reader holds, a FAIR writer waited)
            grantWaiters(state, System.nanoTime(), afterwards);
            forgetIfIdle(state);
        }
        finally {
            mutex.unlock();
        }
        runOffTimer(afterwards);
    }

    /**
     * Completes futures for work the timer found: on another thread, so that a caller's continuation that blocks cannot
     * stall the timer (and with it every expiry and wait timeout of this provider).
     */
    private void runOffTimer(List<Runnable> afterwards) {
        if (afterwards.isEmpty()) {
            return;
        }
        try {
            callbacks.execute(() -> afterwards.forEach(Runnable::run));
        }
        catch (java.util.concurrent.RejectedExecutionException closing) {
            afterwards.forEach(Runnable::run);
        }
    }

    private void leaveQueue(String key, CompletableFuture<LockHandle> future) {
        List<Runnable> afterwards = new ArrayList<>();
        mutex.lock();
        try {
            KeyState state = keys.get(key);
            if (state != null && state.waiters.removeIf(waiter -> {
                if (waiter.future == future) {
                    waiter.timeout.cancel(false);
                    return true;
                }
                return false;
            })) {
                grantWaiters(state, System.nanoTime(), afterwards);
                forgetIfIdle(state);
            }
        }
        finally {
            mutex.unlock();
        }
        runAfterwards(afterwards).join();
    }

    private void forgetIfIdle(KeyState state) {
        if (state.holds.isEmpty() && state.waiters.isEmpty()) {
            keys.remove(state.key, state);
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
        mutex.lock();
        try {
            long now = System.nanoTime();
            for (KeyState state : List.copyOf(keys.values())) {
                purgeExpired(state, now, afterwards);
                if (!state.holds.isEmpty()) {
                    locked.add(state.key);
                }
            }
        }
        finally {
            mutex.unlock();
        }
        runAfterwards(afterwards).join();
        return locked;
    }

    /** How many acquisitions are waiting for {@code key} right now. */
    public int waiting(String key) {
        mutex.lock();
        try {
            KeyState state = keys.get(key);
            return (state != null) ? (int) state.waiters.stream().filter(waiter -> !waiter.future.isDone()).count() : 0;
        }
        finally {
            mutex.unlock();
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
        List<Hold> taken = new ArrayList<>();
        mutex.lock();
        try {
            KeyState state = keys.get(key);
            if (state == null) {
                return false;
            }
            for (Hold hold : state.holds) {
                hold.held = false;
                hold.handle.lostReason = "its lock was taken away (InMemoryLockProvider.expire)";
                if (hold.expiry != null) {
                    hold.expiry.cancel(false);
                }
                taken.add(hold);
            }
            state.holds.clear();
            grantWaiters(state, System.nanoTime(), afterwards);
            forgetIfIdle(state);
        }
        finally {
            mutex.unlock();
        }
        runAfterwards(afterwards).join();
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
        if (!(handle instanceof InMemoryHandle inMemory) || inMemory.hold().provider() != this) {
            throw new IllegalArgumentException("Not a lock of this InMemoryLockProvider: " + handle);
        }
        Hold hold = inMemory.hold();
        mutex.lock();
        try {
            if (hold.held && hold.watchdog) {
                hold.expiresAt = System.nanoTime() + watchdogNanos;
                hold.expiry = timer.schedule(() -> expireDue(hold.key), watchdogNanos, TimeUnit.NANOSECONDS);
            }
        }
        finally {
            mutex.unlock();
        }
    }

    /** Stops the timers; acquisitions still waiting fail with {@link IllegalStateException}. Held locks stay held. */
    @Override
    public void close() {
        List<Waiter> waiting = new ArrayList<>();
        mutex.lock();
        try {
            closed = true;
            keys.values().forEach(state -> waiting.addAll(state.waiters));
            keys.values().forEach(state -> state.waiters.clear());
        }
        finally {
            mutex.unlock();
        }
        timer.shutdownNow();
        callbacks.shutdownNow();
        waiting.forEach(waiter -> waiter.future.completeExceptionally(
                new IllegalStateException("InMemoryLockProvider closed while waiting for '" + waiter.request.key() + "'")));
    }

    @Override
    public String toString() {
        return "InMemoryLockProvider[locked " + lockedKeys() + "]";
    }

    // ---------------------------------------------------------------- state

    /** What one key has: its holders (several only for READ) and its queue of waiters, in arrival order. */
    private static final class KeyState {

        final String key;
        final List<Hold> holds = new ArrayList<>(1);
        final ArrayDeque<Waiter> waiters = new ArrayDeque<>();

        KeyState(String key) {
            this.key = key;
        }
    }

    /** A queued acquisition; its timeout is set right after it is queued, under the mutex. */
    private static final class Waiter {

        final LockRequest request;
        final CompletableFuture<LockHandle> future;
        ScheduledFuture<?> timeout;

        Waiter(LockRequest request, CompletableFuture<LockHandle> future) {
            this.request = request;
            this.future = future;
        }
    }

    /** One owner's lock of one key; its mutable fields change under the mutex only. */
    private final class Hold {

        final String key;
        final LockOwner owner;
        final LockType type;
        final boolean watchdog;
        final InMemoryHandle handle;
        long expiresAt;
        boolean held = true;
        ScheduledFuture<?> expiry;
        /** The permits it was admitted under (1 for a lock). */
        int permits = 1;

        Hold(String key, LockOwner owner, LockType type, boolean watchdog, long expiresAt) {
            this.key = key;
            this.owner = owner;
            this.type = type;
            this.watchdog = watchdog;
            this.expiresAt = expiresAt;
            this.handle = new InMemoryHandle(this);
        }

        InMemoryLockProvider provider() {
            return InMemoryLockProvider.this;
        }
    }

    /** The handle of one {@link Hold}. */
    private final class InMemoryHandle implements LockHandle {

        private final Hold hold;
        volatile long token = -1;
        volatile String lostReason;
        private volatile Consumer<String> lostCallback;
        private volatile boolean lossReported;
        private final java.util.concurrent.atomic.AtomicBoolean lossFired = new java.util.concurrent.atomic.AtomicBoolean();

        InMemoryHandle(Hold hold) {
            this.hold = hold;
        }

        Hold hold() {
            return hold;
        }

        @Override
        public long fencingToken() {
            return token;
        }

        @Override
        public long newFencingToken() {
            if (hold.type == LockType.READ) {
                throw new UnsupportedOperationException("READ locks take no fencing token");
            }
            mutex.lock();
            try {
                if (!current()) {
                    return -1;
                }
                token = nextToken(hold.key);
                return token;
            }
            finally {
                mutex.unlock();
            }
        }

        /**
         * Whether the hold is still its key's, its lease included; under the mutex. An expired hold not purged yet
         * counts as gone: its timer is about to purge it.
         */
        private boolean current() {
            return hold.held && hold.expiresAt - System.nanoTime() > 0;
        }

        @Override
        public CompletableFuture<Boolean> releaseAsync() {
            List<Runnable> afterwards = new ArrayList<>();
            boolean released;
            mutex.lock();
            try {
                KeyState state = keys.get(hold.key);
                if (state != null) {
                    purgeExpired(state, System.nanoTime(), afterwards);
                }
                released = hold.held;
                if (released) {
                    hold.held = false;
                    if (hold.expiry != null) {
                        hold.expiry.cancel(false);
                    }
                    state.holds.remove(hold);
                    grantWaiters(state, System.nanoTime(), afterwards);
                    forgetIfIdle(state);
                }
                else if (state != null) {
                    forgetIfIdle(state);
                }
            }
            finally {
                mutex.unlock();
            }
            CompletableFuture<Void> delivered = runAfterwards(afterwards);
            return delivered.isDone() ? CompletableFuture.completedFuture(released)
                    : delivered.thenApply(ignored -> released);
        }

        @Override
        public void whenLost(Consumer<String> callback) {
            lostCallback = callback;
            if (lostReason != null) {
                fireLost();
            }
        }

        /** Reports the loss once, on a callback thread, whichever of loss and registration comes second. */
        void fireLost() {
            Consumer<String> callback = lostCallback;
            if (lostReason == null) {
                return;
            }
            if (callback != null && lossFired.compareAndSet(false, true)) {
                lossReported = true;
                String reason = lostReason;
                try {
                    callbacks.execute(() -> callback.accept(reason));
                }
                catch (java.util.concurrent.RejectedExecutionException closing) {
                    // closed: nobody is left to tell
                }
            }
        }

        @Override
        public boolean lostWhileHeld() {
            return lossReported;
        }

        @Override
        public boolean stillHeld() {
            mutex.lock();
            try {
                return current();
            }
            finally {
                mutex.unlock();
            }
        }

        @Override
        public String toString() {
            return "InMemoryLock[" + hold.key + ", " + hold.type + ", owner " + hold.owner.id() + (hold.held ? "" : ", gone")
                    + "]";
        }
    }
}

package io.github.distlock.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.github.distlock.LockKeyClosedException;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockHolderInfo;
import io.github.distlock.spi.LockInspector;
import io.github.distlock.spi.LockInstance;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The contract every {@link LockProvider} keeps, as tests a provider's own test class inherits. Each test acts
 * through the SPI only and asserts what a caller would see: who gets the lock, when, with which token.
 *
 * <pre>{@code
 * class MyLockProviderContractTest extends LockProviderContractTest {
 *     protected LockProvider createProvider() { return new MyLockProvider(dataSource); }
 *     protected Duration watchdogTimeout() { return Duration.ofSeconds(1); }
 *     // optional: let the suite simulate a dead holder and a lock taken away behind its holder's back
 *     protected void acquireAndAbandon(LockRequest request) { ... }
 *     protected void expireBehindItsBack(String key) { ... }
 * }
 * }</pre>
 *
 * <p>What it checks: mutual exclusion under contention ({@link LockFuzzer}: 16 threads, unsynchronized counters, no
 * overlap, no lost update), one owner per request (a new owner of a held key waits; no re-entry at this level), release
 * by the owner only, wait semantics (0 tries once, a positive wait ends when the holder releases or after about the
 * wait), fixed leases that expire after their time and not before, watchdog locks kept past their renewal timeout
 * while held, dead holders' locks freed within their lease or renewal timeout, losses reported while held, fencing
 * tokens that grow per key, cancelled waiters that leave no lock behind, and every {@link LockType} the provider
 * declares ({@code FAIR} order, {@code READ} sharing, {@code WRITE} exclusion, exclusion across types of one key) with
 * a clear {@link IllegalArgumentException} for what it does not declare. For a provider that is also a
 * {@link LockInspector}: holders listed in the endpoint's owner format and seen from another instance, force releases
 * that free the key and tell the evicted holder within {@link #evictionNotice()}, a ping, and keys closed on one
 * instance and closed for every other. Tests of things a provider does not declare,
 * or that need a hook it does not implement, are skipped (JUnit assumptions), never passed silently.
 *
 * <p>Time bounds are generous (see {@link #slack()}) so that a loaded CI machine does not fail them; a lock that is
 * wrong is wrong by far more. Keep {@link #watchdogTimeout()} and {@link #shortLease()} short: the suite waits for
 * them.
 *
 * <p>Each test gets a new provider ({@link #createProvider()}), closed after it when it is {@link AutoCloseable}, and
 * keys of its own ({@link #key(String)}), so leftovers of one test never disturb another.
 */
// a provider that never answers must fail its test, not hang the build
@Timeout(180)
public abstract class LockProviderContractTest {

    private LockProvider provider;
    private String keyPrefix;
    private final List<LockHandle> handles = new CopyOnWriteArrayList<>();
    private final List<LockProvider> otherInstances = new CopyOnWriteArrayList<>();

    // ---------------------------------------------------------------- what a provider's test supplies

    /** The provider under test, new for each test; closed after the test when it is {@link AutoCloseable}. */
    protected abstract LockProvider createProvider();

    /**
     * How long a watchdog lock ({@link LockRequest#watchdog()}) outlives a holder that stopped renewing it: Redisson's
     * {@code lockWatchdogTimeout}. Configure the provider with a short one (about a second): tests wait for it.
     */
    protected abstract Duration watchdogTimeout();

    /**
     * Acquires the lock {@code request} describes for a holder that then dies without releasing it, as a process
     * killed with SIGKILL would: nothing renews the lock any more, nothing releases it. Typically: acquire through a
     * second provider instance with its own connection, then shut that instance down without releasing.
     *
     * <p>The default skips the tests that need it.
     *
     * @throws AssertionError when the lock could not be acquired
     */
    protected void acquireAndAbandon(LockRequest request) {
        assumeTrue(false, "the provider's test cannot simulate a dead holder (override acquireAndAbandon)");
    }

    /**
     * Takes the lock of {@code key} away behind its holder's back, in the backend itself, as an operator deleting the
     * key or a failover that lost it would. The default skips the tests that need it.
     */
    protected void expireBehindItsBack(String key) {
        assumeTrue(false, "the provider's test cannot take a lock away (override expireBehindItsBack)");
    }

    /**
     * Waits until {@code count} acquisitions of {@code type} are queued for {@code key} in the backend, so that the
     * order in which waiters arrived is known ({@code FAIR}) and a cancellation happens while the backend has the
     * waiter. The default cannot ask the backend: it waits until the latest waiter has been pending for a quarter of
     * a second, which usually, not certainly, means it is queued; override it with a look at the backend's queue.
     *
     * @param latest the acquisition that came last
     */
    protected void awaitQueued(LockType type, String key, int count, CompletableFuture<LockHandle> latest) {
        await().during(Duration.ofMillis(250)).atMost(slack()).until(() -> !latest.isDone());
    }

    /**
     * Whether the provider can {@linkplain LockProvider#closeKey close keys} for {@code FAIR} locks; the default says
     * no, and the closing tests then check that it says so with an {@link UnsupportedOperationException}.
     */
    protected boolean closesKeys() {
        return false;
    }

    /**
     * Whether the provider can {@linkplain LockProvider#closeKey close keys} for locks of {@code type}. The default:
     * {@code FAIR} locks when {@link #closesKeys()} says so.
     */
    protected boolean closesKeys(LockType type) {
        return type == LockType.FAIR && closesKeys();
    }

    /** Whether closing a key also fails the callers waiting for one of its permits. The default says no. */
    protected boolean closesPermits() {
        return false;
    }

    /**
     * A provider acting as another application instance on the same backend: its own client identity, connection or
     * session, as a second JVM would have. The suite closes it after the test when it is {@link AutoCloseable}. The
     * default ({@code null}) skips the tests that look at a lock from another instance.
     */
    protected @Nullable LockProvider createOtherInstance() {
        return null;
    }

    /**
     * How soon a holder whose lock was {@linkplain LockInspector#forceRelease force-released} is told through
     * {@link LockHandle#whenLost}, whether it holds a watchdog lock or a long fixed lease, on this instance or another.
     */
    protected Duration evictionNotice() {
        return slack();
    }

    /** The fixed lease of the expiry tests: short, so the suite does not wait long, but well above a round trip. */
    protected Duration shortLease() {
        return Duration.ofMillis(500);
    }

    /** Time allowed on top of any expected duration, for a loaded machine and a backend's own timers. */
    protected Duration slack() {
        return Duration.ofSeconds(5);
    }

    /** Locks each of the fuzz test's 16 threads takes. */
    protected int fuzzIterationsPerThread() {
        return 25;
    }

    // ---------------------------------------------------------------- set-up and helpers

    @BeforeEach
    void createProviderUnderTest(TestInfo test) {
        keyPrefix = "contract:" + test.getTestMethod().map(method -> method.getName()).orElse("test") + ":"
                + Long.toString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE, 36) + ":";
        provider = createProvider();
    }

    @AfterEach
    void releaseLeftoversAndClose() throws Exception {
        for (LockHandle handle : handles) {
            try {
                // a test that failed half-way leaves its locks: don't let them outlive it in a shared backend
                if (handle.stillHeld()) {
                    handle.release();
                }
            }
            catch (RuntimeException ignored) {
                // the backend may be the reason the test failed
            }
        }
        for (LockProvider other : otherInstances) {
            if (other instanceof AutoCloseable closeable) {
                closeable.close();
            }
        }
        if (provider instanceof AutoCloseable closeable) {
            closeable.close();
        }
    }

    /** The provider of the running test. */
    protected final LockProvider provider() {
        return provider;
    }

    /** A key of the running test's own: no other test (or earlier run) uses it. */
    protected final String key(String name) {
        return keyPrefix + name;
    }

    /** A request of a new owner. */
    protected static LockRequest request(String key, Duration wait, Duration lease, LockType type, boolean fenced) {
        return new LockRequest(key, wait.toNanos(), lease.toNanos(), fenced, type, LockOwner.next());
    }

    /** Starts an acquisition; a lock it brings is released after the test if the test left it held. */
    protected final CompletableFuture<@Nullable LockHandle> acquireAsync(LockRequest request) {
        return acquireAsync(provider, request);
    }

    /** Starts an acquisition through {@code on}; a lock it brings is released after the test if left held. */
    protected final CompletableFuture<@Nullable LockHandle> acquireAsync(LockProvider on, LockRequest request) {
        CompletableFuture<LockHandle> future = on.acquire(request);
        future.whenComplete((handle, failure) -> {
            if (handle != null) {
                handles.add(handle);
            }
        });
        return future;
    }

    /** Acquires and waits for the outcome: the handle, or {@code null} when not acquired. */
    protected final @Nullable LockHandle acquire(LockRequest request) {
        return acquire(provider, request);
    }

    /** Acquires through {@code on} and waits for the outcome: the handle, or {@code null} when not acquired. */
    protected final @Nullable LockHandle acquire(LockProvider on, LockRequest request) {
        CompletableFuture<LockHandle> future = acquireAsync(on, request);
        try {
            return future.get(Duration.ofNanos(request.waitNanos()).plus(slack()).toMillis(), TimeUnit.MILLISECONDS);
        }
        catch (ExecutionException ex) {
            throw new AssertionError("acquiring " + request.key() + " failed", ex.getCause());
        }
        catch (TimeoutException ex) {
            throw new AssertionError("acquiring " + request.key() + " did not answer within its wait ("
                    + Duration.ofNanos(request.waitNanos()) + ") and " + slack(), ex);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", ex);
        }
    }

    /** A watchdog lock of {@code type} for a new owner, taken at once; fails the test when it is held. */
    protected final LockHandle hold(String key, LockType type) {
        LockHandle handle = acquire(request(key, Duration.ZERO, Duration.ZERO, type, false));
        assertThat(handle).as("%s lock of %s, expected to be free", type, key).isNotNull();
        return handle;
    }

    /** One try by a new owner, watchdog lease: the handle, or {@code null}. */
    protected final @Nullable LockHandle tryOnce(String key, LockType type) {
        return acquire(request(key, Duration.ZERO, Duration.ZERO, type, false));
    }

    /** Whether a new owner gets a {@code type} lock of {@code key} at once; it gives the lock straight back. */
    protected final boolean isFree(String key, LockType type) {
        LockHandle handle = tryOnce(key, type);
        if (handle == null) {
            return false;
        }
        assertThat(handle.release()).as("release of a lock just taken").isTrue();
        return true;
    }

    /**
     * One try by another owner, which must fail if it happened before a lease that began after {@code start} could
     * have run out. Judged by when the try's answer came, so that a machine that stalls cannot fail it wrongly.
     */
    private void assertNotFreedBefore(String key, long start, Duration lease) {
        LockHandle early = tryOnce(key, LockType.REENTRANT);
        long answeredAfter = millisSince(start);
        if (early != null) {
            early.release();
            // 2 ms: backends count leases in whole milliseconds
            assertThat(answeredAfter).as("another owner got the lock before its %s lease could have run out", lease)
                    .isGreaterThanOrEqualTo(lease.toMillis() - 2);
        }
    }

    private static long millisSince(long nanoTime) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - nanoTime);
    }

    private Set<LockType> supportedTypes() {
        Set<LockType> types = EnumSet.noneOf(LockType.class);
        for (LockType type : LockType.values()) {
            if (provider.supports(type, false)) {
                types.add(type);
            }
        }
        return types;
    }

    private void assumeSupported(LockType type, boolean fenced) {
        assumeTrue(provider.supports(type, fenced), "the provider does not declare " + (fenced ? "fenced " : "") + type);
    }

    // ---------------------------------------------------------------- mutual exclusion

    /** Mutual exclusion under contention, per exclusive type: {@link LockFuzzer} with 16 threads on two keys. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = LockType.class, names = {"REENTRANT", "FAIR", "WRITE"})
    protected void sixteenThreadsNeverOverlapNorLoseAnUpdate(LockType type) throws InterruptedException {
        assumeSupported(type, false);
        LockFuzzer.Result result = LockFuzzer.of(provider).threads(16).iterationsPerThread(fuzzIterationsPerThread())
                .keys(key("a"), key("b")).types(type).run();
        assertThat(result.overlaps()).as("holders inside a critical section at once: %s", result).isZero();
        assertThat(result.lostUpdates()).as("increments lost: %s", result).isZero();
        assertThat(result.failedReleases()).as("releases refused though nothing took the lock away: %s", result).isZero();
        assertThat(result.tokenRegressions()).as("fenced holders whose token did not grow: %s", result).isZero();
        assertThat(result.acquisitions()).isEqualTo(result.expected());
    }

    /** A second owner is refused while the first holds, and gets the key once it is released. */
    @Test
    protected void aSecondOwnerIsRefusedWhileTheFirstHolds() {
        LockHandle first = hold(key("k"), LockType.REENTRANT);
        assertThat(tryOnce(key("k"), LockType.REENTRANT)).as("second owner while the first holds").isNull();
        assertThat(first.release()).isTrue();
        assertThat(isFree(key("k"), LockType.REENTRANT)).as("free after the release").isTrue();
    }

    /** No re-entry at the SPI level: a new owner of a held key waits, even on the holder's thread. */
    @Test
    protected void aNewOwnerOfAHeldKeyWaitsInsteadOfReentering() {
        LockHandle first = hold(key("k"), LockType.REENTRANT);
        Duration wait = Duration.ofMillis(300);
        long start = System.nanoTime();
        // same key, same thread, new owner: re-entry is the template's business, never the backend's
        assertThat(acquire(request(key("k"), wait, Duration.ZERO, LockType.REENTRANT, false)))
                .as("a new owner on the holder's own thread").isNull();
        assertThat(millisSince(start)).as("it waited, instead of re-entering or giving up at once")
                .isGreaterThanOrEqualTo(wait.toMillis() * 9 / 10);
        assertThat(first.release()).isTrue();
    }

    /** Locks of different keys neither exclude nor release each other. */
    @Test
    protected void differentKeysAreIndependent() {
        LockHandle a = hold(key("a"), LockType.REENTRANT);
        LockHandle b = hold(key("b"), LockType.REENTRANT);
        assertThat(a.release()).isTrue();
        assertThat(tryOnce(key("b"), LockType.REENTRANT)).as("b is still held after a's release").isNull();
        assertThat(b.release()).isTrue();
    }

    /** Release frees the key at once, round after round. */
    @Test
    protected void aReleasedLockCanBeTakenAtOnceAgainAndAgain() {
        for (int i = 0; i < 10; i++) {
            LockHandle handle = hold(key("k"), LockType.REENTRANT);
            assertThat(tryOnce(key("k"), LockType.REENTRANT)).as("round %d: second owner", i).isNull();
            assertThat(handle.release()).as("round %d: release", i).isTrue();
        }
    }

    // ---------------------------------------------------------------- release by the owner only

    /** Release by the owner only: a holder whose lease ran out releases nothing, and says so. */
    @Test
    protected void releasingALockThatRanOutReturnsFalseAndLeavesTheNextHolderAlone() {
        LockHandle expired = acquire(request(key("k"), Duration.ZERO, shortLease(), LockType.REENTRANT, false));
        assertThat(expired).isNotNull();
        LockHandle next = acquire(request(key("k"), shortLease().plus(slack()), Duration.ZERO, LockType.REENTRANT, false));
        assertThat(next).as("the next owner, after the first one's lease ran out").isNotNull();
        assertThat(expired.stillHeld()).as("the first holder still holds").isFalse();
        assertThat(expired.release()).as("release of a lock that ran out").isFalse();
        assertThat(tryOnce(key("k"), LockType.REENTRANT)).as("the next holder's lock after the stale release").isNull();
        assertThat(next.stillHeld()).isTrue();
        assertThat(next.release()).isTrue();
    }

    // ---------------------------------------------------------------- waiting

    /** A wait of 0 is one try. */
    @Test
    protected void waitZeroTriesOnceAndAnswersPromptly() {
        LockHandle holder = hold(key("k"), LockType.REENTRANT);
        long start = System.nanoTime();
        assertThat(tryOnce(key("k"), LockType.REENTRANT)).isNull();
        assertThat(millisSince(start)).as("one try").isLessThan(slack().toMillis());
        assertThat(holder.release()).isTrue();
    }

    /** A positive wait ends when the holder releases, not when the wait runs out. */
    @Test
    protected void aWaiterGetsTheLockWhenTheHolderReleases() throws Exception {
        LockHandle holder = hold(key("k"), LockType.REENTRANT);
        Duration wait = Duration.ofSeconds(20);
        CompletableFuture<LockHandle> waiter = acquireAsync(request(key("k"), wait, Duration.ZERO, LockType.REENTRANT, false));
        await().during(Duration.ofMillis(300)).atMost(slack()).until(() -> !waiter.isDone());
        long released = System.nanoTime();
        assertThat(holder.release()).isTrue();
        LockHandle handle = waiter.get(slack().toMillis(), TimeUnit.MILLISECONDS);
        assertThat(handle).as("the waiter, after the release").isNotNull();
        assertThat(millisSince(released)).as("woken by the release, not by the end of its wait")
                .isLessThan(slack().toMillis());
        assertThat(handle.release()).isTrue();
    }

    /** A positive wait gives up after about its wait while the holder keeps the lock. */
    @Test
    protected void aWaiterGivesUpAfterAboutItsWait() {
        LockHandle holder = hold(key("k"), LockType.REENTRANT);
        Duration wait = Duration.ofMillis(700);
        long start = System.nanoTime();
        assertThat(acquire(request(key("k"), wait, Duration.ZERO, LockType.REENTRANT, false))).isNull();
        long took = millisSince(start);
        assertThat(took).as("gave up after about its wait").isGreaterThanOrEqualTo(wait.toMillis() * 9 / 10)
                .isLessThan(wait.plus(slack()).toMillis());
        assertThat(holder.stillHeld()).isTrue();
        assertThat(holder.release()).isTrue();
    }

    // ---------------------------------------------------------------- leases

    /** A fixed lease expires after its time, not before, whether or not its holder still runs. */
    @Test
    protected void aFixedLeaseExpiresAfterItsTimeNotBefore() {
        Duration lease = shortLease();
        long start = System.nanoTime();
        LockHandle holder = acquire(request(key("k"), Duration.ZERO, lease, LockType.REENTRANT, false));
        assertThat(holder).isNotNull();
        assertNotFreedBefore(key("k"), start, lease);
        LockHandle next = acquire(request(key("k"), lease.plus(slack()), Duration.ZERO, LockType.REENTRANT, false));
        long took = millisSince(start);
        assertThat(next).as("a waiter, once the lease has run out (the holder never released)").isNotNull();
        // the lease began after 'start', so it cannot have ended before start + lease (2 ms: millisecond clocks)
        assertThat(took).as("freed after the lease").isGreaterThanOrEqualTo(lease.toMillis() - 2)
                .isLessThan(lease.plus(slack()).toMillis());
        assertThat(next.release()).isTrue();
    }

    /** A watchdog lock stays taken well past its renewal timeout while its holder lives. */
    @Test
    protected void aWatchdogLockOutlivesItsRenewalTimeoutWhileHeld() {
        LockHandle holder = hold(key("k"), LockType.REENTRANT);
        Duration held = watchdogTimeout().multipliedBy(5).dividedBy(2);
        // every poll is another owner's try: the lock must stay taken for the whole time, not just at the end
        await().during(held).atMost(held.plus(slack())).pollInterval(watchdogTimeout().dividedBy(4))
                .until(() -> tryOnce(key("k"), LockType.REENTRANT) == null);
        assertThat(holder.stillHeld()).isTrue();
        assertThat(holder.lostWhileHeld()).isFalse();
        assertThat(holder.release()).as("released by its holder after %s", held).isTrue();
    }

    /** A dead holder's watchdog lock is freed within the watchdog timeout ({@link #acquireAndAbandon}). */
    @Test
    protected void anAbandonedWatchdogLockIsFreedWithinTheWatchdogTimeout() {
        acquireAndAbandon(request(key("k"), Duration.ZERO, Duration.ZERO, LockType.REENTRANT, false));
        long abandoned = System.nanoTime();
        assertThat(tryOnce(key("k"), LockType.REENTRANT)).as("the dead holder's lock, right after its death").isNull();
        Duration timeout = watchdogTimeout();
        LockHandle next = acquire(request(key("k"), timeout.plus(slack()), Duration.ZERO, LockType.REENTRANT, false));
        assertThat(next).as("a waiter, within the watchdog timeout of the holder's death").isNotNull();
        assertThat(millisSince(abandoned)).isLessThan(timeout.plus(slack()).toMillis());
        assertThat(next.release()).isTrue();
    }

    /** A dead holder's fixed lease is freed after the lease, not before ({@link #acquireAndAbandon}). */
    @Test
    protected void anAbandonedFixedLeaseIsFreedAfterItsLeaseNotBefore() {
        // longer than the other tests' lease: the hook may take a while (a new connection) before it returns
        Duration lease = shortLease().multipliedBy(3);
        long start = System.nanoTime();
        acquireAndAbandon(request(key("k"), Duration.ZERO, lease, LockType.REENTRANT, false));
        assertNotFreedBefore(key("k"), start, lease);
        LockHandle next = acquire(request(key("k"), lease.plus(slack()), Duration.ZERO, LockType.REENTRANT, false));
        assertThat(next).as("a waiter, once the dead holder's lease ran out").isNotNull();
        assertThat(millisSince(start)).isGreaterThanOrEqualTo(lease.toMillis() - 2)
                .isLessThan(lease.plus(slack()).multipliedBy(2).toMillis());
        assertThat(next.release()).isTrue();
    }

    /** A lock taken away behind its holder's back is reported lost while held ({@link #expireBehindItsBack}); the stale holder's release touches nothing. */
    @Test
    protected void aLockTakenAwayBehindItsBackIsReportedLostWhileHeld() throws Exception {
        LockHandle holder = hold(key("k"), LockType.REENTRANT);
        CompletableFuture<String> lost = new CompletableFuture<>();
        holder.whenLost(lost::complete);
        expireBehindItsBack(key("k"));
        String reason = lost.get(watchdogTimeout().multipliedBy(2).plus(slack()).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(reason).as("the reason given").isNotBlank();
        assertThat(holder.lostWhileHeld()).isTrue();
        assertThat(holder.stillHeld()).isFalse();
        LockHandle next = hold(key("k"), LockType.REENTRANT);
        assertThat(holder.release()).as("release by the holder that lost it").isFalse();
        assertThat(tryOnce(key("k"), LockType.REENTRANT)).as("the next holder's lock after the stale release").isNull();
        assertThat(next.release()).isTrue();
    }

    // ---------------------------------------------------------------- fencing

    /** Fencing tokens grow per key across holders, expired ones included; unfenced locks carry none. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(LockType.class)
    protected void fencingTokensGrowPerKeyAcrossHolders(LockType type) {
        assumeSupported(type, true);
        String key = key("k");
        List<Long> tokens = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            LockHandle fenced = acquire(request(key, Duration.ZERO, Duration.ZERO, type, true));
            assertThat(fenced).isNotNull();
            tokens.add(fenced.fencingToken());
            assertThat(fenced.release()).isTrue();
            // an unfenced holder in between has no token, and does not disturb the sequence
            LockHandle unfenced = acquire(request(key, Duration.ZERO, Duration.ZERO, type, false));
            assertThat(unfenced.fencingToken()).as("token of an unfenced lock").isEqualTo(-1);
            assertThat(unfenced.release()).isTrue();
        }
        // a holder whose fixed lease ran out, then the next one: still a higher token
        LockHandle expiring = acquire(request(key, Duration.ZERO, shortLease(), type, true));
        tokens.add(expiring.fencingToken());
        LockHandle next = acquire(request(key, shortLease().plus(slack()), Duration.ZERO, type, true));
        assertThat(next).isNotNull();
        tokens.add(next.fencingToken());
        assertThat(next.release()).isTrue();
        assertThat(tokens).as("tokens of successive holders of %s", key).allMatch(token -> token >= 0)
                .isSorted().doesNotHaveDuplicates();
    }

    /** {@link LockHandle#newFencingToken()} issues higher tokens while held, and none after release. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(LockType.class)
    protected void aTokenIssuedForAHeldUnfencedLockIsHigherAndNoneAfterItIsGone(LockType type) {
        assumeSupported(type, true);
        LockHandle first = acquire(request(key("k"), Duration.ZERO, Duration.ZERO, type, true));
        long before = first.fencingToken();
        assertThat(first.release()).isTrue();
        LockHandle holder = hold(key("k"), type);
        long issued = holder.newFencingToken();
        assertThat(issued).as("token issued while held").isGreaterThan(before);
        assertThat(holder.fencingToken()).as("fencingToken() after newFencingToken()").isEqualTo(issued);
        assertThat(holder.newFencingToken()).as("a second one").isGreaterThan(issued);
        assertThat(holder.release()).isTrue();
        assertThat(holder.newFencingToken()).as("token for a lock no longer held").isEqualTo(-1);
    }

    // ---------------------------------------------------------------- cancelled waiters

    /** Waiters whose future is cancelled leave no lock behind, and do not keep the lock from live waiters. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = LockType.class, names = {"REENTRANT", "FAIR", "WRITE"})
    protected void cancelledWaitersLeaveNoLockBehind(LockType type) throws Exception {
        assumeSupported(type, false);
        // a short wait first, so that the suite does not sit out a long one on every backend; a longer one only when
        // the machine was too slow to queue the four waiters well within it
        if (!cancelledWaitersLeaveNoLockBehind(type, Duration.ofMillis(1600), "short")) {
            assertThat(cancelledWaitersLeaveNoLockBehind(type, slack().multipliedBy(2), "long"))
                    .as("four waiters queued within half their wait of %s", slack().multipliedBy(2)).isTrue();
        }
    }

    /**
     * One run of {@link #cancelledWaitersLeaveNoLockBehind(LockType)} with waiters that wait {@code wait}; answers
     * {@code false}, leaving no lock behind, when queueing them took so long that a waiter's wait could run out before
     * its cancel (which would test nothing).
     */
    private boolean cancelledWaitersLeaveNoLockBehind(LockType type, Duration wait, String run) throws Exception {
        String key = key("k-" + run);
        LockHandle holder = hold(key, type);
        long start = System.nanoTime();
        List<CompletableFuture<LockHandle>> cancelled = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            CompletableFuture<LockHandle> waiter = acquireAsync(request(key, wait, Duration.ZERO, type, false));
            awaitQueued(type, key, i + 1, waiter);
            cancelled.add(waiter);
        }
        CompletableFuture<LockHandle> live = acquireAsync(request(key, wait.plus(slack()), Duration.ZERO, type, false));
        awaitQueued(type, key, 4, live);
        // the cancels below follow at once: well before the first waiter's wait could run out
        boolean inTime = millisSince(start) < wait.toMillis() - 300;
        cancelled.forEach(waiter -> {
            boolean cancelledNow = waiter.cancel(true);
            if (inTime) {
                assertThat(cancelledNow).as("cancel of a waiting acquisition").isTrue();
            }
        });
        assertThat(holder.release()).isTrue();
        LockHandle handle = live.get(slack().toMillis(), TimeUnit.MILLISECONDS);
        assertThat(handle).as("the waiter that was not cancelled").isNotNull();
        assertThat(handle.release()).isTrue();
        // a cancelled waiter may still win the lock for a moment, but must give it back by itself
        await().atMost(slack()).until(() -> isFree(key, type));
        if (!inTime) {
            return false;
        }
        long waitOver = start + wait.toNanos();
        await().atMost(wait.plus(slack())).until(() -> System.nanoTime() - waitOver > 0 && isFree(key, type));
        return true;
    }

    // ---------------------------------------------------------------- lock types: exclusion within and across types

    /** Each declared type excludes (or, READ, shares with) a second holder of its own type. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(LockType.class)
    protected void eachDeclaredTypeLocksAsItsNameSays(LockType type) {
        assumeSupported(type, false);
        LockHandle first = hold(key("k"), type);
        LockHandle second = tryOnce(key("k"), type);
        if (type.exclusive()) {
            assertThat(second).as("a second %s holder", type).isNull();
        }
        else {
            assertThat(second).as("a second %s holder (shared)", type).isNotNull();
            assertThat(second.release()).isTrue();
        }
        assertThat(first.release()).isTrue();
        assertThat(isFree(key("k"), type)).isTrue();
    }

    /** Locks of one key exclude each other across types unless both are READ, as {@link LockType} promises. */
    @Test
    protected void locksOfOneKeyExcludeEachOtherAcrossTypes() {
        Set<LockType> types = supportedTypes();
        assumeTrue(types.size() > 1, "the provider declares one lock type");
        List<String> overlaps = new ArrayList<>();
        for (LockType held : types) {
            for (LockType asked : types) {
                if (held == asked || (!held.exclusive() && !asked.exclusive())) {
                    continue;
                }
                String key = key(held + "-" + asked);
                LockHandle holder = hold(key, held);
                LockHandle other = tryOnce(key, asked);
                boolean oneFamily = family(held) == family(asked);
                if (other != null) {
                    if (oneFamily) {
                        overlaps.add(asked + " taken while " + held + " held");
                    }
                    if (!other.release()) {
                        overlaps.add(asked + " could not be released while " + held + " held");
                    }
                }
                // across families the backend may grant both (LockType), but must never corrupt the other's lock
                if (!holder.release()) {
                    overlaps.add(held + " was no longer its holder's after " + asked + " came and went");
                }
            }
        }
        assertThat(overlaps).as("locks of one key, different types (LockType: one family excludes, no family corrupts another)")
                .isEmpty();
    }

    // ---------------------------------------------------------------- key names

    /**
     * A key named like another key's companion (a backend's read/write hash, queue, permits or token counter — names
     * an application may well produce from user input, say {@code 'file:' + #path} with a path ending in
     * {@code :rw}) is a lock of its own: free while the other is held, and neither release touches the other. A
     * backend may refuse names in a namespace it reserves, with {@link IllegalArgumentException}.
     */
    @Test
    protected void aKeyNamedLikeAnotherKeysCompanionIsALockOfItsOwn() {
        List<LockType> types = new ArrayList<>(supportedTypes());
        List<java.util.function.UnaryOperator<String>> lookalikes = List.of(k -> k + ":rw", k -> k + ":permits",
                k -> "distlock_rw:{" + k + "}", k -> "distlock_queue:{" + k + "}", k -> "redisson_lock_token:{" + k + "}",
                // the key as a whole hash tag: Redis companions named prefix:{k} for a key without braces are
                // prefix:k for one with them, so 'k' and '{k}' would share them
                k -> "{" + k + "}");
        List<String> problems = new ArrayList<>();
        int n = 0;
        for (LockType baseType : types) {
            for (java.util.function.UnaryOperator<String> lookalike : lookalikes) {
                for (LockType otherType : types) {
                    for (int variant = 0; variant < 4; variant++) {
                        String base = key("c" + n++);
                        String other = lookalike.apply(base);
                        boolean baseFirst = variant < 2;
                        boolean releaseBaseFirst = variant % 2 == 0;
                        String label = baseType + " " + base + " / " + otherType + " " + other;
                        try {
                            Try first = baseFirst ? new Try(hold(base, baseType), false) : tryOrRefused(other, otherType);
                            if (first.refused()) {
                                // the backend refuses names in a namespace of its own
                                continue;
                            }
                            if (first.handle() == null) {
                                problems.add(label + ": " + other + " was refused although free");
                                continue;
                            }
                            Try second = baseFirst ? tryOrRefused(other, otherType) : new Try(tryOnce(base, baseType), false);
                            if (second.refused()) {
                                first.handle().release();
                                continue;
                            }
                            if (second.handle() == null) {
                                problems.add(label + ": the second was refused while the first was held");
                                first.handle().release();
                                continue;
                            }
                            LockHandle baseHandle = baseFirst ? first.handle() : second.handle();
                            LockHandle otherHandle = baseFirst ? second.handle() : first.handle();
                            LockHandle released = releaseBaseFirst ? baseHandle : otherHandle;
                            LockHandle kept = releaseBaseFirst ? otherHandle : baseHandle;
                            String keptKey = releaseBaseFirst ? other : base;
                            LockType keptType = releaseBaseFirst ? otherType : baseType;
                            if (!released.release()) {
                                problems.add(label + ": " + (releaseBaseFirst ? base : other) + " was not its holder's");
                            }
                            LockHandle intruder = tryOnce(keptKey, keptType.exclusive() ? keptType
                                    : (types.contains(LockType.WRITE) ? LockType.WRITE : keptType));
                            if (intruder != null && (keptType.exclusive() || types.contains(LockType.WRITE))) {
                                problems.add(label + ": " + keptKey + " was taken again after the other's release");
                            }
                            if (intruder != null) {
                                intruder.release();
                            }
                            if (!kept.release()) {
                                problems.add(label + ": " + keptKey + " was no longer its holder's after the other's release");
                            }
                        }
                        catch (RuntimeException | AssertionError ex) {
                            // a lock the test still holds is released after it (acquireAsync keeps the handles)
                            String failure = String.valueOf(ex);
                            problems.add(label + ": " + failure.substring(0, Math.min(200, failure.length())));
                        }
                    }
                }
            }
        }
        assertThat(problems).as("keys named like another key's companions").isEmpty();
    }

    /** One try of a name that may be in the backend's reserved namespace: refused, or the handle ({@code null}: held). */
    private Try tryOrRefused(String key, LockType type) {
        try {
            return new Try(tryOnce(key, type), false);
        }
        catch (IllegalArgumentException ex) {
            return new Try(null, true);
        }
        catch (AssertionError ex) {
            if (ex.getCause() instanceof IllegalArgumentException) {
                return new Try(null, true);
            }
            throw ex;
        }
    }

    /** What one try got: a handle, {@code null} when the lock was held, or refused as a reserved name. */
    private record Try(@Nullable LockHandle handle, boolean refused) {
    }

    /** REENTRANT and FAIR form one family, READ and WRITE another (see {@link LockType}). */
    private static int family(LockType type) {
        return (type == LockType.READ || type == LockType.WRITE) ? 1 : 0;
    }

    // ---------------------------------------------------------------- FAIR order

    /** FAIR waiters get the lock in the order they arrived. */
    @Test
    protected void fairWaitersAreServedInArrivalOrder() throws Exception {
        assumeSupported(LockType.FAIR, false);
        String key = key("k");
        LockHandle holder = hold(key, LockType.FAIR);
        List<Integer> order = new CopyOnWriteArrayList<>();
        List<CompletableFuture<Void>> served = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            int arrival = i;
            CompletableFuture<LockHandle> waiter = acquireAsync(request(key, Duration.ofSeconds(30), Duration.ZERO,
                    LockType.FAIR, false));
            // the next one can only get the lock after this one released it: the order recorded is the order served
            served.add(waiter.thenCompose(handle -> {
                order.add(arrival);
                return handle.releaseAsync();
            }).thenAccept(released -> assertThat(released).isTrue()));
            awaitQueued(LockType.FAIR, key, i + 1, waiter);
        }
        assertThat(holder.release()).isTrue();
        CompletableFuture.allOf(served.toArray(CompletableFuture[]::new)).get(slack().multipliedBy(2).toMillis(),
                TimeUnit.MILLISECONDS);
        assertThat(order).containsExactly(0, 1, 2, 3, 4);
    }

    /** A FAIR newcomer does not overtake a queued waiter. */
    @Test
    protected void fairNewcomersDoNotOvertakeQueuedWaiters() throws Exception {
        assumeSupported(LockType.FAIR, false);
        String key = key("k");
        LockHandle holder = hold(key, LockType.FAIR);
        CompletableFuture<LockHandle> queued = acquireAsync(request(key, Duration.ofSeconds(30), Duration.ZERO,
                LockType.FAIR, false));
        awaitQueued(LockType.FAIR, key, 1, queued);
        assertThat(holder.release()).isTrue();
        LockHandle first = queued.get(slack().toMillis(), TimeUnit.MILLISECONDS);
        assertThat(first).as("the queued waiter, after the release").isNotNull();
        assertThat(tryOnce(key, LockType.FAIR)).as("a newcomer while the queued waiter holds").isNull();
        assertThat(first.release()).isTrue();
    }

    /** FAIR waiters whose wait ran out leave the queue: they never keep the key from the next caller. */
    @Test
    protected void fairWaitersThatGaveUpLeaveTheQueue() {
        assumeSupported(LockType.FAIR, false);
        String key = key("k");
        LockHandle holder = hold(key, LockType.FAIR);
        for (int i = 0; i < 10; i++) {
            // waits of a few milliseconds: what a caller with a short waitTime sends under contention
            assertThat(acquire(request(key, Duration.ofMillis(1 + i % 5), Duration.ZERO, LockType.FAIR, false)))
                    .as("a short FAIR wait while the key is held").isNull();
        }
        assertThat(holder.release()).isTrue();
        // every waiter has given up, so nobody is ahead of the next caller
        await().atMost(slack()).until(() -> isFree(key, LockType.FAIR));
    }

    // ---------------------------------------------------------------- closing keys

    /**
     * Closing a key fails every queued FAIR waiter at once (not after its wait) and every newcomer, with the reason;
     * the holder keeps the lock and releases it normally; reopened, the key locks again.
     */
    @Test
    protected void closingAKeyFailsItsWaitersAtOnceUntilReopened() throws Exception {
        assumeSupported(LockType.FAIR, false);
        String key = key("k");
        if (!closesKeys()) {
            assertThatThrownBy(() -> provider.closeKey(key, "sold out"))
                    .isInstanceOf(UnsupportedOperationException.class);
            return;
        }
        LockHandle holder = hold(key, LockType.FAIR);
        List<CompletableFuture<LockHandle>> waiters = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            waiters.add(acquireAsync(request(key, Duration.ofSeconds(60), Duration.ZERO, LockType.FAIR, false)));
            awaitQueued(LockType.FAIR, key, i + 1, waiters.get(i));
        }
        assertThat(provider.closeKey(key, "sold out")).as("waiters told").isEqualTo(5);
        for (CompletableFuture<LockHandle> waiter : waiters) {
            // within the suite's slack, against a wait of a minute: they were told, not timed out
            assertThatThrownBy(() -> waiter.get(slack().toMillis(), TimeUnit.MILLISECONDS))
                    .isInstanceOf(ExecutionException.class).cause()
                    .isInstanceOf(LockKeyClosedException.class)
                    .hasMessage("Lock '" + key + "' is closed: sold out");
        }
        assertThatThrownBy(() -> acquireAsync(request(key, Duration.ofSeconds(60), Duration.ZERO, LockType.FAIR, false))
                .get(slack().toMillis(), TimeUnit.MILLISECONDS))
                .as("a newcomer while closed").cause().isInstanceOf(LockKeyClosedException.class);
        assertThat(holder.release()).as("the holder's release while closed").isTrue();
        assertThatThrownBy(() -> tryOnce(key, LockType.FAIR)).as("closed, though free")
                .hasRootCauseInstanceOf(LockKeyClosedException.class);
        provider.reopenKey(key);
        LockHandle again = tryOnce(key, LockType.FAIR);
        assertThat(again).as("after reopening").isNotNull();
        assertThat(again.release()).isTrue();
    }

    // ---------------------------------------------------------------- what an operator does: look up, force release

    private LockInspector inspector() {
        assumeTrue(provider instanceof LockInspector, "the provider is no LockInspector");
        return (LockInspector) provider;
    }

    private LockProvider otherInstance() {
        LockProvider other = createOtherInstance();
        assumeTrue(other != null, "the provider's test cannot make another instance (override createOtherInstance)");
        otherInstances.add(other);
        return other;
    }

    private static String ownerName(LockProvider on, LockRequest request) {
        return ((LockInspector) on).ownerName(request.owner().id());
    }

    /**
     * Every live hold is listed once, its owner in the one format the endpoint shows everywhere
     * ({@code <instance id>:<owner id>}, as {@link LockInspector#ownerName} names it), its mode in the backend's words;
     * a released lock is no longer listed.
     */
    @Test
    protected void holdersNameEveryLiveHoldInTheOwnerFormatOfTheEndpoint() {
        LockInspector inspector = inspector();
        String key = key("k");
        assertThat(inspector.holders(key)).as("a key nobody locked").isEmpty();
        LockRequest request = request(key, Duration.ZERO, Duration.ZERO, LockType.REENTRANT, false);
        LockHandle handle = acquire(request);
        assertThat(handle).isNotNull();
        String owner = inspector.ownerName(request.owner().id());
        assertThat(owner).endsWith(":" + request.owner().id());
        assertThat(inspector.holders(key)).singleElement().satisfies(holder -> {
            assertThat(holder.key()).isEqualTo(key);
            assertThat(holder.owner()).isEqualTo(owner);
            assertThat(holder.owner()).isEqualTo(holder.instanceId() + ":" + request.owner().id());
            assertThat(holder.mode()).isIn("exclusive", "write");
        });
        assertThat(handle.release()).isTrue();
        assertThat(inspector.holders(key)).as("after the release").isEmpty();
        if (provider.supports(LockType.READ, false)) {
            LockRequest first = request(key, Duration.ZERO, Duration.ZERO, LockType.READ, false);
            LockRequest second = request(key, Duration.ZERO, Duration.ZERO, LockType.READ, false);
            assertThat(acquire(first)).isNotNull();
            assertThat(acquire(second)).isNotNull();
            assertThat(inspector.holders(key)).extracting(LockHolderInfo::owner, LockHolderInfo::mode)
                    .containsExactlyInAnyOrder(org.assertj.core.groups.Tuple.tuple(ownerName(provider, first), "read"),
                            org.assertj.core.groups.Tuple.tuple(ownerName(provider, second), "read"));
        }
        if (provider.supportsPermits()) {
            String permitKey = key("permits");
            LockRequest first = permits(permitKey, Duration.ZERO, 3);
            LockRequest second = permits(permitKey, Duration.ZERO, 3);
            assertThat(acquire(first)).isNotNull();
            assertThat(acquire(second)).isNotNull();
            assertThat(inspector.holders(permitKey)).extracting(LockHolderInfo::owner, LockHolderInfo::mode)
                    .containsExactlyInAnyOrder(org.assertj.core.groups.Tuple.tuple(ownerName(provider, first), "permit"),
                            org.assertj.core.groups.Tuple.tuple(ownerName(provider, second), "permit"));
        }
    }

    /** Another instance sees the same holder, named by the instance that announced itself. */
    @Test
    protected void anotherInstanceSeesTheHolderAndTheInstanceItAnnounced() {
        LockInspector inspector = inspector();
        LockProvider other = otherInstance();
        assumeTrue(other instanceof LockInspector, "the other instance is no LockInspector");
        LockInstance self = new LockInstance("contract-" + Long.toString(System.nanoTime(), 36), "host-of-the-holder", 4242);
        inspector.announce(self);
        String key = key("k");
        LockRequest request = request(key, Duration.ZERO, Duration.ZERO, LockType.REENTRANT, false);
        assertThat(acquire(request)).isNotNull();
        // an announcement may be stored in the background
        await().atMost(slack()).untilAsserted(() -> assertThat(((LockInspector) other).holders(key)).singleElement()
                .satisfies(holder -> {
                    assertThat(holder.owner()).isEqualTo(inspector.ownerName(request.owner().id()));
                    assertThat(holder.instance()).isEqualTo(self);
                }));
    }

    /**
     * A force release evicts exactly the holders it returns, frees the key for the next owner at once, and tells the
     * evicted holder through its lease-lost path within {@link #evictionNotice()}, whether it holds a watchdog lock or a
     * long fixed lease, here or on another instance; its own release then answers {@code false} and touches nothing.
     */
    @ParameterizedTest(name = "holder on another instance: {0}, fixed lease of a minute: {1}")
    @org.junit.jupiter.params.provider.CsvSource({"false, false", "false, true", "true, false", "true, true"})
    protected void aForceReleaseEvictsTellsTheHolderAndFreesTheKey(boolean onAnotherInstance, boolean fixedLease)
            throws Exception {
        LockInspector inspector = inspector();
        LockProvider holderSide = onAnotherInstance ? otherInstance() : provider;
        assumeTrue(holderSide instanceof LockInspector, "the other instance is no LockInspector");
        String key = key("k");
        LockRequest request = request(key, Duration.ZERO, fixedLease ? Duration.ofMinutes(1) : Duration.ZERO,
                LockType.REENTRANT, false);
        LockHandle evicted = acquire(holderSide, request);
        assertThat(evicted).isNotNull();
        java.util.concurrent.CountDownLatch told = new java.util.concurrent.CountDownLatch(1);
        evicted.whenLost(how -> told.countDown());

        assertThat(inspector.forceRelease(key)).extracting(LockHolderInfo::owner)
                .containsExactly(ownerName(holderSide, request));
        LockRequest next = request(key, Duration.ZERO, Duration.ZERO, LockType.REENTRANT, false);
        LockHandle nextHolder = acquire(next);
        assertThat(nextHolder).as("the next owner, at once").isNotNull();
        assertThat(told.await(evictionNotice().toMillis(), TimeUnit.MILLISECONDS))
                .as("the evicted holder told within %s", evictionNotice()).isTrue();
        assertThat(evicted.release()).as("the evicted holder's own release").isFalse();
        assertThat(inspector.holders(key)).as("the next owner's lock, untouched by that release")
                .extracting(LockHolderInfo::owner).containsExactly(inspector.ownerName(next.owner().id()));
        assertThat(nextHolder.release()).isTrue();
        assertThat(inspector.forceRelease(key)).as("nobody holds it").isEmpty();
    }

    /**
     * A force release from an expected owner is refused, naming the holders now, when that owner does not hold the
     * key; given the holder's owner it takes only that owner's holds: another reader keeps its own.
     */
    @Test
    protected void aForceReleaseFromAnExpectedOwnerTakesOnlyThatOwnersHolds() {
        LockInspector inspector = inspector();
        String key = key("k");
        LockRequest request = request(key, Duration.ZERO, Duration.ZERO, LockType.REENTRANT, false);
        assertThat(acquire(request)).isNotNull();
        String owner = inspector.ownerName(request.owner().id());
        LockInspector.ForceRelease refused = inspector.forceRelease(key, inspector.ownerName(LockOwner.next().id()));
        assertThat(refused.released()).as("an owner that never held it").isFalse();
        assertThat(refused.holders()).extracting(LockHolderInfo::owner).containsExactly(owner);
        assertThat(isFree(key, LockType.REENTRANT)).as("still held after the refusal").isFalse();
        LockInspector.ForceRelease done = inspector.forceRelease(key, owner);
        assertThat(done.released()).isTrue();
        assertThat(done.holders()).extracting(LockHolderInfo::owner).containsExactly(owner);
        assertThat(isFree(key, LockType.REENTRANT)).as("after the owner's holds were taken").isTrue();
        if (provider.supports(LockType.READ, false)) {
            LockRequest first = request(key, Duration.ZERO, Duration.ZERO, LockType.READ, false);
            LockRequest second = request(key, Duration.ZERO, Duration.ZERO, LockType.READ, false);
            assertThat(acquire(first)).isNotNull();
            assertThat(acquire(second)).isNotNull();
            assertThat(inspector.forceRelease(key, ownerName(provider, first)).released()).isTrue();
            assertThat(inspector.holders(key)).as("the other reader keeps its hold")
                    .extracting(LockHolderInfo::owner).containsExactly(ownerName(provider, second));
        }
    }

    /** The health indicator's question: a reachable backend answers a ping in time. */
    @Test
    protected void aPingIsAnsweredWhileTheBackendAnswers() {
        assertThat(inspector().ping(Duration.ofSeconds(2))).isTrue();
    }

    // ---------------------------------------------------------------- closing keys across instances

    /**
     * A key closed on one instance is closed on every instance: the waiters queued here and there fail at once with
     * the reason, a newcomer elsewhere fails even when the key is free, the holder keeps its lock and releases it
     * normally; reopened on the other instance, the key locks again everywhere.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(LockType.class)
    protected void aKeyClosedOnOneInstanceIsClosedOnEveryInstanceUntilReopened(LockType type) throws Exception {
        assumeSupported(type, false);
        assumeTrue(closesKeys(type), "the provider does not close keys for " + type);
        LockProvider other = otherInstance();
        String key = key("k");
        // a reader waits only behind a writer
        LockType holderType = (type == LockType.READ) ? LockType.WRITE : type;
        assumeSupported(holderType, false);
        LockHandle holder = hold(key, holderType);
        List<CompletableFuture<LockHandle>> waiters = new ArrayList<>();
        waiters.add(acquireAsync(request(key, Duration.ofSeconds(60), Duration.ZERO, type, false)));
        awaitQueued(type, key, 1, waiters.get(0));
        waiters.add(acquireAsync(other, request(key, Duration.ofSeconds(60), Duration.ZERO, type, false)));
        awaitQueued(type, key, 2, waiters.get(1));
        waiters.add(acquireAsync(other, request(key, Duration.ofSeconds(60), Duration.ZERO, type, false)));
        awaitQueued(type, key, 3, waiters.get(2));

        assertThat(provider.closeKey(key, "sold out")).as("waiters told, at least this instance's").isGreaterThanOrEqualTo(1);
        for (CompletableFuture<LockHandle> waiter : waiters) {
            assertThatThrownBy(() -> waiter.get(slack().toMillis(), TimeUnit.MILLISECONDS))
                    .isInstanceOf(ExecutionException.class).cause()
                    .isInstanceOf(LockKeyClosedException.class)
                    .hasMessage("Lock '" + key + "' is closed: sold out");
        }
        assertThat(holder.release()).as("the holder's release while closed").isTrue();
        assertThatThrownBy(() -> acquireAsync(other, request(key, Duration.ZERO, Duration.ZERO, type, false))
                .get(slack().toMillis(), TimeUnit.MILLISECONDS))
                .as("a newcomer on the other instance, the key free but closed").cause()
                .isInstanceOf(LockKeyClosedException.class).hasMessage("Lock '" + key + "' is closed: sold out");
        other.reopenKey(key);
        LockHandle again = acquire(other, request(key, Duration.ZERO, Duration.ZERO, type, false));
        assertThat(again).as("after reopening on the other instance").isNotNull();
        assertThat(again.release()).isTrue();
        assertThat(isFree(key, type)).as("reopened here too").isTrue();
    }

    /** Closing a key fails the callers waiting for one of its permits, here and on another instance. */
    @Test
    protected void closingAKeyFailsItsPermitWaitersUntilReopened() throws Exception {
        assumeTrue(provider.supportsPermits() && closesPermits(), "the provider does not close permit keys");
        LockProvider other = createOtherInstance();
        if (other != null) {
            otherInstances.add(other);
        }
        LockProvider elsewhere = (other != null) ? other : provider;
        String key = key("permits");
        LockHandle first = acquire(permits(key, Duration.ZERO, 2));
        LockHandle second = acquire(permits(key, Duration.ZERO, 2));
        assertThat(first).isNotNull();
        assertThat(second).isNotNull();
        List<CompletableFuture<LockHandle>> waiters = List.of(
                acquireAsync(permits(key, Duration.ofSeconds(60), 2)),
                acquireAsync(elsewhere, permits(key, Duration.ofSeconds(60), 2)));
        await().during(Duration.ofMillis(250)).atMost(slack()).until(() -> waiters.stream().noneMatch(CompletableFuture::isDone));
        provider.closeKey(key, "sold out");
        for (CompletableFuture<LockHandle> waiter : waiters) {
            assertThatThrownBy(() -> waiter.get(slack().toMillis(), TimeUnit.MILLISECONDS))
                    .isInstanceOf(ExecutionException.class).cause()
                    .isInstanceOf(LockKeyClosedException.class)
                    .hasMessage("Lock '" + key + "' is closed: sold out");
        }
        assertThat(first.release()).as("a permit holder's release while closed").isTrue();
        assertThatThrownBy(() -> acquireAsync(elsewhere, permits(key, Duration.ZERO, 2))
                .get(slack().toMillis(), TimeUnit.MILLISECONDS))
                .as("a newcomer, a permit free but the key closed").cause()
                .isInstanceOf(LockKeyClosedException.class);
        elsewhere.reopenKey(key);
        LockHandle again = acquire(elsewhere, permits(key, Duration.ZERO, 2));
        assertThat(again).as("after reopening").isNotNull();
        assertThat(again.release()).isTrue();
        assertThat(second.release()).isTrue();
    }

    // ---------------------------------------------------------------- permits

    /**
     * {@code permits = 3}: three owners at once and never a fourth (a fuzz of 8 threads, each holding a moment), a
     * released permit goes to a waiter, and the lock of the same key is apart. Skipped for a provider without permits.
     */
    @Test
    protected void permitsAdmitThatManyOwnersAndNeverMore() throws Exception {
        assumeTrue(provider.supportsPermits(), "the provider takes no permits");
        String key = key("k");
        List<LockHandle> three = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            three.add(acquire(permits(key, Duration.ZERO, 3)));
            assertThat(three.get(i)).as("permit %d of 3", i).isNotNull();
        }
        assertThat(acquire(permits(key, Duration.ZERO, 3))).as("a fourth at once").isNull();
        LockHandle lock = hold(key, LockType.REENTRANT);
        CompletableFuture<LockHandle> fourth = acquireAsync(permits(key, Duration.ofSeconds(30), 3));
        assertThat(three.get(0).release()).isTrue();
        LockHandle got = fourth.get(slack().toMillis(), TimeUnit.MILLISECONDS);
        assertThat(got).as("the fourth, once a permit was released").isNotNull();
        for (LockHandle handle : List.of(three.get(1), three.get(2), got, lock)) {
            assertThat(handle.release()).isTrue();
        }
        java.util.concurrent.atomic.AtomicInteger inside = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicInteger most = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(8);
        try {
            List<java.util.concurrent.Future<?>> threads = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                threads.add(pool.submit(() -> {
                    for (int i = 0; i < fuzzIterationsPerThread(); i++) {
                        LockHandle handle = acquire(permits(key, Duration.ofSeconds(30), 3));
                        assertThat(handle).isNotNull();
                        most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                        await().pollDelay(Duration.ofMillis(2)).until(() -> true);
                        inside.decrementAndGet();
                        assertThat(handle.release()).isTrue();
                    }
                    return null;
                }));
            }
            for (java.util.concurrent.Future<?> thread : threads) {
                thread.get(slack().multipliedBy(6).toMillis(), TimeUnit.MILLISECONDS);
            }
        }
        finally {
            pool.shutdownNow();
        }
        assertThat(most.get()).as("most owners at once").isBetween(2, 3);
    }

    private static LockRequest permits(String key, Duration wait, int permits) {
        return new LockRequest(key, wait.toNanos(), 0, false, LockType.REENTRANT, LockOwner.next(), permits);
    }

    // ---------------------------------------------------------------- READ and WRITE

    /** READ locks share; a WRITE lock waits for every reader and then excludes readers and writers. */
    @Test
    protected void readersShareWritersExcludeAndAWaitingWriterGetsIn() throws Exception {
        assumeSupported(LockType.READ, false);
        assumeSupported(LockType.WRITE, false);
        String key = key("k");
        LockHandle reader1 = hold(key, LockType.READ);
        LockHandle reader2 = tryOnce(key, LockType.READ);
        assertThat(reader2).as("a second reader").isNotNull();
        assertThat(tryOnce(key, LockType.WRITE)).as("a writer while two read").isNull();
        CompletableFuture<LockHandle> writer = acquireAsync(request(key, Duration.ofSeconds(30), Duration.ZERO,
                LockType.WRITE, false));
        assertThat(reader1.release()).isTrue();
        await().during(Duration.ofMillis(300)).atMost(slack()).until(() -> !writer.isDone());
        assertThat(reader2.release()).isTrue();
        LockHandle writing = writer.get(slack().toMillis(), TimeUnit.MILLISECONDS);
        assertThat(writing).as("the writer, once both readers left").isNotNull();
        assertThat(tryOnce(key, LockType.READ)).as("a reader while the writer writes").isNull();
        assertThat(tryOnce(key, LockType.WRITE)).as("a second writer").isNull();
        assertThat(writing.release()).isTrue();
        assertThat(isFree(key, LockType.READ)).isTrue();
    }

    // ---------------------------------------------------------------- undeclared types and fencing

    /** A type (or fencing) the provider does not declare is refused with an IllegalArgumentException naming it. */
    @Test
    protected void undeclaredTypesAreRefusedWithAClearError() {
        List<String> refusals = new ArrayList<>();
        for (LockType type : LockType.values()) {
            for (boolean fenced : new boolean[] {false, true}) {
                if (provider.supports(type, fenced)) {
                    continue;
                }
                String what = (fenced ? "fenced " : "") + type;
                Throwable refusal = refusal(request(key(what.replace(' ', '-')), Duration.ZERO, Duration.ZERO, type, fenced));
                assertThat(refusal).as("acquiring an undeclared %s lock", what).isInstanceOf(IllegalArgumentException.class);
                assertThat(refusal.getMessage()).as("the refusal of %s names the type", what).contains(type.name());
                refusals.add(what);
            }
        }
        assumeTrue(!refusals.isEmpty(), "the provider declares every type, fenced or not");
    }

    /** What acquiring {@code request} threw or failed its future with; fails the test when it acquired. */
    private Throwable refusal(LockRequest request) {
        CompletableFuture<LockHandle> future;
        try {
            future = acquireAsync(request);
        }
        catch (RuntimeException ex) {
            return ex;
        }
        try {
            LockHandle handle = future.get(slack().toMillis(), TimeUnit.MILLISECONDS);
            fail("an undeclared " + request.type() + (request.fenced() ? " (fenced)" : "") + " lock was "
                    + ((handle != null) ? "acquired" : "answered as merely not acquired"));
            return null;
        }
        catch (ExecutionException ex) {
            return (ex.getCause() instanceof CompletionException wrapped) ? wrapped.getCause() : ex.getCause();
        }
        catch (InterruptedException | TimeoutException ex) {
            throw new AssertionError(ex);
        }
    }

    // ---------------------------------------------------------------- extreme durations (LockDurations)

    /**
     * The longest leases a caller can ask for, as nanoseconds: {@code Long.MAX_VALUE} ("keep it until I'm done"),
     * the largest {@code Duration} through {@link LockDurations#toNanos(Duration)}, and {@link LockDurations#FOR_EVER}.
     */
    private static long[] extremeNanos() {
        return new long[] {Long.MAX_VALUE, LockDurations.toNanos(Duration.ofSeconds(Long.MAX_VALUE, 999_999_999)),
                LockDurations.FOR_EVER_NANOS};
    }

    /**
     * A lock with an extreme fixed lease ({@code Long.MAX_VALUE} ns, the largest {@code Duration}, {@code FOR_EVER})
     * is held until released: no second owner gets in while it is held (not at once, nor a moment later), the holder
     * can release it, and the next owner takes it. For every exclusive type the provider declares.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = LockType.class, names = {"REENTRANT", "FAIR", "WRITE"})
    protected void anExtremeLeaseKeepsTheLockExclusiveUntilReleased(LockType type) {
        assumeSupported(type, false);
        for (long lease : extremeNanos()) {
            String key = key("lease-" + lease);
            LockHandle first = acquire(new LockRequest(key, 0, lease, false, type, LockOwner.next()));
            assertThat(first).as("%s lock with a lease of %d ns", type, lease).isNotNull();
            assertThat(tryOnce(key, type)).as("a second %s owner at once, beside a lease of %d ns", type, lease).isNull();
            assertThat(acquire(new LockRequest(key, 0, lease, false, type, LockOwner.next())))
                    .as("a second %s owner with the same lease of %d ns", type, lease).isNull();
            // a lease that overflowed into "expire now" or a few milliseconds frees the key shortly after
            await().during(Duration.ofMillis(300)).atMost(slack()).until(() -> tryOnce(key, LockType.REENTRANT) == null);
            assertThat(first.stillHeld()).as("held with a lease of %d ns", lease).isTrue();
            assertThat(first.release()).as("release of a %s lock with a lease of %d ns", type, lease).isTrue();
            LockHandle next = tryOnce(key, type);
            assertThat(next).as("the next %s owner after the release (lease %d ns)", type, lease).isNotNull();
            assertThat(next.release()).isTrue();
        }
    }

    /** A fenced lock with an extreme lease gets a token and excludes like any other. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = LockType.class, names = {"REENTRANT", "FAIR", "WRITE"})
    protected void anExtremeLeaseOfAFencedLockIsExclusiveAndTokened(LockType type) {
        assumeSupported(type, true);
        String key = key("fenced");
        LockHandle first = acquire(new LockRequest(key, 0, Long.MAX_VALUE, true, type, LockOwner.next()));
        assertThat(first).as("fenced %s lock with a lease of Long.MAX_VALUE ns", type).isNotNull();
        assertThat(first.fencingToken()).isPositive();
        await().during(Duration.ofMillis(300)).atMost(slack()).until(() -> tryOnce(key, type) == null);
        assertThat(first.release()).isTrue();
        assertThat(isFree(key, type)).isTrue();
    }

    /** Permits with an extreme lease: that many owners and never more, until one releases. */
    @Test
    protected void anExtremeLeaseOfAPermitNeverAdmitsOneMoreOwner() {
        assumeTrue(provider.supportsPermits(), "the provider takes no permits");
        String key = key("permits");
        LockHandle one = acquire(new LockRequest(key, 0, Long.MAX_VALUE, false, LockType.REENTRANT, LockOwner.next(), 2));
        LockHandle two = acquire(new LockRequest(key, 0, Long.MAX_VALUE, false, LockType.REENTRANT, LockOwner.next(), 2));
        assertThat(one).as("permit 1 of 2 with a lease of Long.MAX_VALUE ns").isNotNull();
        assertThat(two).as("permit 2 of 2 with a lease of Long.MAX_VALUE ns").isNotNull();
        await().during(Duration.ofMillis(300)).atMost(slack())
                .until(() -> acquire(permits(key, Duration.ZERO, 2)) == null);
        assertThat(one.release()).isTrue();
        LockHandle three = acquire(permits(key, Duration.ZERO, 2));
        assertThat(three).as("a permit once one was released").isNotNull();
        assertThat(two.release()).isTrue();
        assertThat(three.release()).isTrue();
    }

    /**
     * A wait of {@code Long.MAX_VALUE} ns (or the largest {@code Duration}) waits until the holder releases: it neither
     * gives up at once (a deadline that overflowed into the past) nor fails; then the waiter holds the lock alone.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = LockType.class, names = {"REENTRANT", "FAIR", "WRITE"})
    protected void anExtremeWaitWaitsUntilTheHolderReleases(LockType type) throws Exception {
        assumeSupported(type, false);
        for (long wait : extremeNanos()) {
            String key = key("wait-" + wait);
            LockHandle holder = hold(key, type);
            CompletableFuture<LockHandle> waiter = acquireAsync(new LockRequest(key, wait, 0, false, type,
                    LockOwner.next()));
            await().during(Duration.ofMillis(300)).atMost(slack()).until(() -> !waiter.isDone());
            assertThat(holder.release()).isTrue();
            LockHandle got = waiter.get(slack().toMillis(), TimeUnit.MILLISECONDS);
            assertThat(got).as("%s waiter with a wait of %d ns, after the release", type, wait).isNotNull();
            assertThat(tryOnce(key, type)).as("a second %s owner beside the waiter that got it", type).isNull();
            assertThat(got.release()).isTrue();
        }
    }

    /**
     * One unit: a wait of 1 ns is a try (answered promptly, not acquired while held), and the shortest lease (1 ms)
     * is granted and runs out, after which the next owner takes the key.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = LockType.class, names = {"REENTRANT", "FAIR", "WRITE"})
    protected void oneUnitWaitsAndLeasesAreTheShortestNotZeroNorNegative(LockType type) {
        assumeSupported(type, false);
        String key = key("one-unit");
        LockHandle holder = hold(key, type);
        long start = System.nanoTime();
        assertThat(acquire(new LockRequest(key, 1, 0, false, type, LockOwner.next())))
                .as("a %s wait of 1 ns while held", type).isNull();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("answer to a 1 ns wait").isLessThan(slack());
        assertThat(holder.release()).isTrue();
        LockHandle shortest = acquire(new LockRequest(key, slack().toNanos(), LockRequest.MIN_LEASE_NANOS, false, type,
                LockOwner.next()));
        // granted, or (a lease shorter than a round trip) already gone: either way it must run out, not last
        await().atMost(slack()).until(() -> isFree(key, type));
        if (shortest != null) {
            assertThat(shortest.release()).as("release of a 1 ms lease long run out").isFalse();
        }
    }
}

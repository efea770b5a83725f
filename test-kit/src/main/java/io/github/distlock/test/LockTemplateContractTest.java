package io.github.distlock.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.HeldLock;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockContext;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import io.github.distlock.NestedLockException;
import io.github.distlock.test.LockCallModel.Call;
import io.github.distlock.test.LockCallModel.Case;
import io.github.distlock.test.LockCallModel.Opts;
import io.github.distlock.test.LockCallModel.Shape;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * What {@link DefaultLockTemplate} builds on a {@link LockProvider}, checked on the provider under test: several keys
 * at once (all or none, one global order so no deadlock), re-entry by nested calls of one thread (and only of that
 * thread), interrupted waiters that leave nothing behind, fencing tokens seen by the guarded code, undeclared
 * options refused, nested calls across lock types refused, and generated calls checked against a model
 * ({@link LockCallModel}, docs/model-tests.md). Providers don't implement these themselves; this suite shows that the
 * template's way of using the SPI works on theirs.
 *
 * <pre>{@code
 * class MyLockTemplateContractTest extends LockTemplateContractTest {
 *     protected LockProvider createProvider() { return new MyLockProvider(dataSource); }
 * }
 * }</pre>
 */
// a provider that never answers must fail its test, not hang the build
@Timeout(120)
public abstract class LockTemplateContractTest {

    private LockProvider provider;
    private DefaultLockTemplate template;
    private String prefix;

    /** The provider under test, new for each test; closed after the test when it is {@link AutoCloseable}. */
    protected abstract LockProvider createProvider();

    /**
     * A second instance of the backend, as another application instance would have it (its own provider on the same
     * servers), for {@link #everyGeneratedCallKeepsTheModelsPromises()}; closed after the test when it is
     * {@link AutoCloseable} and not {@link #provider()} itself. A backend whose providers share nothing (in-memory)
     * returns {@link #provider()}.
     */
    protected LockProvider createSecondInstance() {
        return createProvider();
    }

    /** How many generated cases CI runs; {@code -Ddistlock.model.tries} overrides it. */
    protected int modelTries() {
        return 150;
    }

    /** Time allowed on top of any expected duration, for a loaded machine and a backend's own timers. */
    protected Duration slack() {
        return Duration.ofSeconds(5);
    }

    @BeforeEach
    void createTemplate(TestInfo test) {
        provider = createProvider();
        prefix = "template-contract:" + test.getTestMethod().map(method -> method.getName()).orElse("test") + ":"
                + Long.toString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE, 36) + ":";
        // wait 0 and the watchdog by default; tests that wait say so
        template = new DefaultLockTemplate(provider, prefix, Duration.ZERO, null, List.of());
    }

    @AfterEach
    void closeProvider() throws Exception {
        template.shutdown();
        if (provider instanceof AutoCloseable closeable) {
            closeable.close();
        }
    }

    /** The template of the running test, on {@link #provider()}, keys prefixed with the test's own prefix. */
    protected final LockTemplate template() {
        return template;
    }

    /** The provider of the running test. */
    protected final LockProvider provider() {
        return provider;
    }

    /** Whether another owner, asking the provider directly, is refused {@code key} (a key as given to the template). */
    protected final boolean heldByAnyone(String key) {
        LockHandle handle = tryOnce(key);
        if (handle == null) {
            return true;
        }
        assertThat(handle.release()).isTrue();
        return false;
    }

    /** A lock of {@code key} held by another owner, outside the template. */
    protected final LockHandle holdElsewhere(String key) {
        LockHandle handle = tryOnce(key);
        assertThat(handle).as("%s, expected to be free", key).isNotNull();
        return handle;
    }

    /** One try of a new owner, straight to the provider; a provider that does not answer fails the test. */
    private LockHandle tryOnce(String key) {
        try {
            return provider.acquire(new LockRequest(template.fullKey(key), 0, 0, false, LockOwner.next()))
                    .get(slack().toMillis(), TimeUnit.MILLISECONDS);
        }
        catch (ExecutionException | TimeoutException ex) {
            throw new AssertionError("one try of " + key + " failed or did not answer within " + slack(), ex);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", ex);
        }
    }

    private LockOptions waiting(Duration wait) {
        return LockOptions.waitFor(wait);
    }

    // ---------------------------------------------------------------- several keys

    /** A multi-key call holds every key while its code runs, and none after. */
    @Test
    protected void aCallHoldsEveryKeyOfItsSetWhileItRuns() {
        List<String> seenHeld = template.execute(List.of("a", "b", "c"), LockOptions.DEFAULTS,
                () -> List.of("a", "b", "c").stream().filter(this::heldByAnyone).toList());
        assertThat(seenHeld).containsExactly("a", "b", "c");
        assertThat(List.of("a", "b", "c")).noneMatch(this::heldByAnyone);
    }

    /** Several keys are taken all or none: a call that can't have one holds none of the others afterwards. */
    @Test
    protected void severalKeysAreTakenAllOrNone() {
        LockHandle b = holdElsewhere("b");
        AtomicBoolean ran = new AtomicBoolean();
        assertThat(template.tryExecute(List.of("a", "b", "c"), LockOptions.DEFAULTS, () -> ran.getAndSet(true)).acquired())
                .as("a call whose key b is held elsewhere").isFalse();
        assertThat(heldByAnyone("a")).as("a, taken before b was refused, released before the answer").isFalse();
        assertThat(heldByAnyone("c")).isFalse();
        assertThatThrownBy(() -> template.execute(List.of("c", "b", "a"), waiting(Duration.ofMillis(300)), () -> ran.getAndSet(true)))
                .isInstanceOf(LockAcquisitionException.class).hasMessageContaining(template.fullKey("b"));
        assertThat(ran).as("the guarded code ran without all its locks").isFalse();
        assertThat(heldByAnyone("a")).isFalse();
        assertThat(b.release()).isTrue();
        assertThat(template.tryExecute(List.of("a", "b", "c"), LockOptions.DEFAULTS, () -> "ran").acquired()).isTrue();
    }

    /** Calls naming the same keys in different orders never deadlock (one global order) and never overlap. */
    @Test
    protected void keysNamedInAnyOrderNeverDeadlock() throws Exception {
        List<String> keys = List.of("a", "b", "c");
        int[] counters = new int[keys.size()];
        AtomicInteger[] inside = {new AtomicInteger(), new AtomicInteger(), new AtomicInteger()};
        AtomicInteger overlaps = new AtomicInteger();
        AtomicInteger expected = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        CountDownLatch start = new CountDownLatch(1);
        int iterations = 20;
        try {
            List<Future<?>> threads = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                threads.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < iterations; i++) {
                        List<String> mine = new ArrayList<>(keys);
                        Collections.shuffle(mine);
                        // two or three keys, in the order this call names them: {a, b} here, {b, a} there
                        List<String> set = mine.subList(0, 2 + ThreadLocalRandom.current().nextInt(2));
                        expected.addAndGet(set.size());
                        template.execute(set, waiting(Duration.ofSeconds(30)), () -> {
                            for (String key : set) {
                                int k = keys.indexOf(key);
                                if (inside[k].incrementAndGet() != 1) {
                                    overlaps.incrementAndGet();
                                }
                                counters[k]++;
                            }
                            for (String key : set) {
                                inside[keys.indexOf(key)].decrementAndGet();
                            }
                            return null;
                        });
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> thread : threads) {
                // a deadlock would keep two calls waiting for each other's second key until their 30 s ran out
                thread.get(60, TimeUnit.SECONDS);
            }
        }
        finally {
            pool.shutdownNow();
        }
        assertThat(overlaps).hasValue(0);
        assertThat(counters[0] + counters[1] + counters[2]).as("increments, each under its key's lock").isEqualTo(expected.get());
        assertThat(keys).noneMatch(this::heldByAnyone);
    }

    // ---------------------------------------------------------------- re-entry

    /** A nested call of the same thread re-enters the held lock, without a second owner in the backend. */
    @Test
    protected void aNestedCallOfTheSameThreadReentersTheHeldLock() {
        String result = template.execute("k", LockOptions.DEFAULTS, () -> {
            // wait 0: only re-entry can let the nested call in; the backend would refuse a second owner
            String inner = template.execute("k", LockOptions.DEFAULTS, () -> template.execute(List.of("k", "m"),
                    LockOptions.DEFAULTS, () -> "inner"));
            assertThat(heldByAnyone("k")).as("the outer lock after the nested calls returned").isTrue();
            assertThat(heldByAnyone("m")).as("the nested call's own key after it returned").isFalse();
            return inner;
        });
        assertThat(result).isEqualTo("inner");
        assertThat(heldByAnyone("k")).isFalse();
    }

    /** Re-entry is per thread: another thread is refused while a call holds the key. */
    @Test
    protected void anotherThreadDoesNotReenter() throws Exception {
        ExecutorService other = Executors.newSingleThreadExecutor();
        try {
            Boolean otherRan = template.execute("k", LockOptions.DEFAULTS,
                    () -> other.submit(() -> template.tryRun("k", LockOptions.DEFAULTS, () -> { })).get(30, TimeUnit.SECONDS));
            assertThat(otherRan).as("another thread's call while this one holds the key").isFalse();
        }
        finally {
            other.shutdownNow();
        }
    }

    // ---------------------------------------------------------------- giving up

    /** An interrupted waiter fails, keeps its interrupt and leaves no lock behind. */
    @Test
    protected void anInterruptedWaiterLeavesNoLockBehind() throws Exception {
        LockHandle holder = holdElsewhere("k");
        Duration wait = Duration.ofSeconds(2);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicBoolean interruptKept = new AtomicBoolean();
        AtomicBoolean ran = new AtomicBoolean();
        long start = System.nanoTime();
        Thread waiter = new Thread(() -> {
            try {
                template.run("k", waiting(wait), () -> ran.set(true));
            }
            catch (RuntimeException ex) {
                failure.set(ex);
                interruptKept.set(Thread.currentThread().isInterrupted());
            }
        }, "interrupted-waiter");
        waiter.start();
        await().atMost(slack()).until(() -> waiter.getState() == Thread.State.WAITING
                || waiter.getState() == Thread.State.TIMED_WAITING);
        waiter.interrupt();
        waiter.join(slack().toMillis());
        assertThat(waiter.isAlive()).as("the interrupted waiter still waits").isFalse();
        assertThat(failure.get()).isInstanceOf(LockAcquisitionException.class);
        assertThat(interruptKept).as("the interrupt flag, kept for the caller").isTrue();
        assertThat(ran).isFalse();
        assertThat(holder.release()).isTrue();
        await().atMost(slack()).until(() -> !heldByAnyone("k"));
        long waitOver = start + wait.toNanos();
        await().atMost(wait.plus(slack())).until(() -> System.nanoTime() - waitOver > 0 && !heldByAnyone("k"));
    }

    /**
     * An interrupted waiter stops the backend's wait as well (the provider's future is cancelled): a backend left
     * waiting would take the key after the holder's release only to give it back, ahead of the live waiters.
     */
    @Test
    protected void anInterruptedWaiterStopsTheBackendsWait() throws Exception {
        List<CompletableFuture<LockHandle>> asked = new CopyOnWriteArrayList<>();
        LockProvider recording = new LockProvider() {
            @Override
            public CompletableFuture<@Nullable LockHandle> acquire(LockRequest request) {
                CompletableFuture<LockHandle> acquisition = provider.acquire(request);
                asked.add(acquisition);
                return acquisition;
            }

            @Override
            public boolean supports(LockType type, boolean fenced) {
                return provider.supports(type, fenced);
            }
        };
        DefaultLockTemplate recorded = new DefaultLockTemplate(recording, prefix, Duration.ZERO, null,
                List.of());
        try {
            LockHandle holder = holdElsewhere("k");
            Thread waiter = new Thread(() -> {
                try {
                    recorded.run("k", waiting(Duration.ofSeconds(60)), () -> { });
                }
                catch (RuntimeException expected) {
                    // LockAcquisitionException: asserted by anInterruptedWaiterLeavesNoLockBehind
                }
            }, "interrupted-waiter");
            waiter.start();
            await().atMost(slack()).until(() -> asked.size() == 1 && (waiter.getState() == Thread.State.WAITING
                    || waiter.getState() == Thread.State.TIMED_WAITING));
            waiter.interrupt();
            waiter.join(slack().toMillis());
            assertThat(waiter.isAlive()).as("the interrupted waiter still waits").isFalse();
            await("the backend's acquisition ended").atMost(slack()).until(() -> asked.get(0).isDone());
            assertThat(holder.release()).isTrue();
            await().atMost(slack()).until(() -> !heldByAnyone("k"));
        }
        finally {
            recorded.shutdown();
        }
    }

    /** A cancelled asynchronous acquisition leaves no lock behind. */
    @Test
    protected void aCancelledAsyncAcquisitionLeavesNoLockBehind() {
        LockHandle holder = holdElsewhere("b");
        long start = System.nanoTime();
        CompletableFuture<HeldLock> acquisition = template.acquireAsync(List.of("a", "b"), waiting(Duration.ofSeconds(2)));
        await().during(Duration.ofMillis(200)).atMost(slack()).until(() -> !acquisition.isDone());
        assertThat(acquisition.cancel(true)).isTrue();
        assertThat(holder.release()).isTrue();
        // the cancelled acquisition may still win a key for a moment, but must give it back by itself
        await().atMost(slack()).until(() -> !heldByAnyone("a") && !heldByAnyone("b"));
        long waitOver = start + Duration.ofSeconds(2).toNanos();
        await().atMost(Duration.ofSeconds(2).plus(slack()))
                .until(() -> System.nanoTime() - waitOver > 0 && !heldByAnyone("a") && !heldByAnyone("b"));
    }

    // ---------------------------------------------------------------- fencing and options

    /** Fenced calls see growing tokens; a fenced call nested in an unfenced one gets one. */
    @Test
    protected void fencedCallsSeeGrowingTokensAndANestedFencedCallGetsOne() {
        assumeTrue(provider.supports(LockType.REENTRANT, true), "the provider declares no fenced REENTRANT locks");
        LockOptions fenced = LockOptions.DEFAULTS.withFencing();
        long first = template.execute("k", fenced, () -> LockContext.fencingToken().orElseThrow());
        long second = template.execute("k", fenced, () -> LockContext.fencingToken().orElseThrow());
        assertThat(second).isGreaterThan(first);
        OptionalLong nested = template.execute("k", LockOptions.DEFAULTS, () -> {
            assertThat(LockContext.fencingToken()).as("an unfenced call's token").isEmpty();
            return template.execute("k", fenced, LockContext::fencingToken);
        });
        assertThat(nested).as("token of a fenced call nested in an unfenced one").isPresent();
        assertThat(nested.getAsLong()).isGreaterThan(second);
    }

    /** Options the provider does not declare are refused before any code runs or any key is taken. */
    @Test
    protected void undeclaredOptionsAreRefusedBeforeAnythingRuns() {
        List<LockOptions> refused = new ArrayList<>();
        for (LockType type : LockType.values()) {
            for (boolean fencing : new boolean[] {false, true}) {
                if (!provider.supports(type, fencing)) {
                    LockOptions options = LockOptions.DEFAULTS.withType(type);
                    refused.add(fencing ? options.withFencing() : options);
                }
            }
        }
        assumeTrue(!refused.isEmpty(), "the provider declares every type, fenced or not");
        AtomicBoolean ran = new AtomicBoolean();
        for (LockOptions options : refused) {
            assertThatThrownBy(() -> template.run("k", options, () -> ran.set(true)))
                    .as("%s", options).isInstanceOf(IllegalArgumentException.class).hasMessageContaining(options.type().name());
        }
        assertThat(ran).isFalse();
        assertThat(heldByAnyone("k")).isFalse();
    }

    // ---------------------------------------------------------------- nested calls across lock types

    /**
     * A nested call re-enters only what its outer hold covers: {@code READ} or {@code WRITE} inside a {@code REENTRANT}
     * or {@code FAIR} hold (another lock family: on Redis another key, which the hold excludes nobody from) and
     * {@code REENTRANT} or {@code FAIR} inside {@code WRITE} are refused with a {@link NestedLockException} naming the key
     * and both types; the nested code does not run, and the outer call still holds its lock.
     */
    @Test
    protected void aNestedCallOfTheOtherLockFamilyIsRefusedNotReentered() {
        List<LockType[]> pairs = new ArrayList<>();
        for (LockType outer : LockType.values()) {
            for (LockType nested : LockType.values()) {
                if (!NestedLockException.reenters(outer, nested) && provider.supports(outer, false)
                        && provider.supports(nested, false)) {
                    pairs.add(new LockType[] {outer, nested});
                }
            }
        }
        assumeTrue(!pairs.isEmpty(), "the provider declares one lock type only");
        AtomicBoolean nestedRan = new AtomicBoolean();
        for (LockType[] pair : pairs) {
            String key = "k-" + pair[0] + "-" + pair[1];
            String fullKey = template.fullKey(key);
            Throwable refused = template.execute(key, LockOptions.DEFAULTS.withType(pair[0]), () -> {
                Throwable thrown = null;
                try {
                    template.run(key, LockOptions.DEFAULTS.withType(pair[1]), () -> nestedRan.set(true));
                }
                catch (NestedLockException ex) {
                    thrown = ex;
                }
                LockHandle intruder = tryOnce(fullKey, pair[0].exclusive() ? pair[0] : LockType.WRITE);
                assertThat(intruder).as("another owner after the refused nested %s inside %s", pair[1], pair[0]).isNull();
                return thrown;
            });
            assertThat(refused).as("nested %s inside %s", pair[1], pair[0]).isInstanceOf(NestedLockException.class)
                    .hasMessageContaining("'" + fullKey + "'").hasMessageContaining(pair[0].name())
                    .hasMessageContaining(pair[1].name());
            NestedLockException nested = (NestedLockException) refused;
            assertThat(nested.getKey()).isEqualTo(fullKey);
            assertThat(nested.getHeldType()).isEqualTo(pair[0]);
            assertThat(nested.getRequestedType()).isEqualTo(pair[1]);
            LockHandle after = tryOnce(fullKey, pair[0].exclusive() ? pair[0] : LockType.WRITE);
            assertThat(after).as("%s after the outer call returned", key).isNotNull();
            assertThat(after.release()).isTrue();
        }
        assertThat(nestedRan).as("a nested call's code ran under a hold that does not cover it").isFalse();
    }

    /**
     * What the outermost call holds is what a nested call re-enters: {@code READ} inside {@code WRITE} re-enters, and a
     * {@code WRITE} inside that {@code READ} re-enters the {@code WRITE} hold too, while a reader of another owner stays
     * out through all three levels.
     */
    @Test
    protected void readInsideWriteReentersAndAWriteInsideThatReadToo() {
        assumeTrue(provider.supports(LockType.WRITE, false) && provider.supports(LockType.READ, false),
                "the provider declares no READ/WRITE locks");
        String fullKey = template.fullKey("k");
        String result = template.execute("k", LockOptions.DEFAULTS.withType(LockType.WRITE),
                () -> template.execute("k", LockOptions.DEFAULTS.withType(LockType.READ),
                        () -> template.execute("k", LockOptions.DEFAULTS.withType(LockType.WRITE), () -> {
                            assertThat(tryOnce(fullKey, LockType.READ)).as("a reader of another owner").isNull();
                            return "three levels";
                        })));
        assertThat(result).isEqualTo("three levels");
        LockHandle reader = tryOnce(fullKey, LockType.READ);
        assertThat(reader).as("a reader after the writer returned").isNotNull();
        assertThat(reader.release()).isTrue();
    }

    private LockHandle tryOnce(String fullKey, LockType type) {
        try {
            return provider.acquire(new LockRequest(fullKey, 0, 0, false, type, LockOwner.next()))
                    .get(slack().toMillis(), TimeUnit.MILLISECONDS);
        }
        catch (Exception ex) {
            throw new AssertionError("one try of " + fullKey + " as " + type + " failed", ex);
        }
    }

    // ---------------------------------------------------------------- options: the template agrees with the annotation

    /**
     * A minimum hold longer than the lease is refused by the annotation at startup (it resolves the configured default
     * lease into its options); a template call naming no lease gets the configured default lease too, so it is refused
     * the same way, naming holdAtLeast and the default lease, before anything is taken.
     */
    @Test
    protected void aMinimumHoldLongerThanTheDefaultLeaseIsRefusedAsByTheAnnotation() {
        DefaultLockTemplate leased = new DefaultLockTemplate(provider, prefix, Duration.ZERO, Duration.ofMillis(100),
                List.of());
        try {
            AtomicBoolean ran = new AtomicBoolean();
            LockOptions options = LockOptions.DEFAULTS.withHoldAtLeast(Duration.ofMillis(200));
            assertThatThrownBy(() -> leased.run("k", options, () -> ran.set(true)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("holdAtLeast")
                    .hasMessageContaining("distlock.lease-time");
            assertThat(leased.acquireAsync(List.of("k"), options)).failsWithin(slack())
                    .withThrowableOfType(ExecutionException.class).withCauseInstanceOf(IllegalArgumentException.class);
            assertThat(ran).isFalse();
            assertThat(heldByAnyone("k")).isFalse();
            // within the lease, or with the watchdog named, the same hold is fine
            assertThat(leased.execute("k", LockOptions.DEFAULTS.withHoldAtLeast(Duration.ofMillis(100)), () -> "ran"))
                    .isEqualTo("ran");
            assertThat(leased.execute("k2", options.withLeaseTime(LockOptions.WATCHDOG), () -> "ran")).isEqualTo("ran");
        }
        finally {
            leased.shutdown();
        }
    }

    // ---------------------------------------------------------------- generated calls against a model

    /**
     * Generated cases (see {@link LockCallModel}): options at their defaults, extremes and around one millisecond, call
     * shapes (blocking, try, asynchronous, in a transaction that commits or rolls back), nesting up to three levels
     * with mixed options and keys, and a second instance holding keys meanwhile. Each outcome must be one the model
     * allows, and the probe of {@link ModelRunner} must see no two holders, no body without its lock, no token out of
     * order and no key left held. A failure prints the seed and the case shrunk to a minimum. Long runs:
     * {@code -Ddistlock.model.seed=random -Ddistlock.model.tries=5000}.
     */
    @Test
    @Timeout(600)
    protected void everyGeneratedCallKeepsTheModelsPromises() throws Exception {
        long seed = LockCallModel.seed();
        int tries = LockCallModel.tries(modelTries());
        LockProvider second = createSecondInstance();
        System.out.println("Generated lock calls: seed " + seed + ", " + tries + " cases (-Ddistlock.model.seed=" + seed + ")");
        try (ModelRunner runner = new ModelRunner(provider, second, prefix, slack())) {
            LockCallModel model = new LockCallModel(seed, LockCallModel.extremes(), runner.backend().transactions());
            // -Ddistlock.model.all=true: go on after a failure and report every distinct shrunk case at the end
            boolean all = Boolean.getBoolean("distlock.model.all");
            java.util.Map<String, String> failures = new java.util.LinkedHashMap<>();
            for (int i = 0; i < tries && failures.size() < 10; i++) {
                Case generated = model.next();
                String failure = runner.run(generated);
                if (failure != null) {
                    Case shrunk = LockCallModel.shrink(generated, candidate -> runner.run(candidate) != null, 80);
                    String report = "Case " + i + " of seed " + seed + " (-Ddistlock.model.seed=" + seed
                            + ") broke the model:\n" + generated.java() + "\n" + failure + "\nShrunk:\n" + shrunk.java()
                            + "\n" + runner.run(shrunk);
                    if (!all) {
                        throw new AssertionError(report);
                    }
                    failures.putIfAbsent(shrunk.java(), report);
                }
            }
            assertThat(failures.values()).as("distinct shrunk failures of seed %s", seed).isEmpty();
        }
        finally {
            if (second != provider && second instanceof AutoCloseable closeable) {
                closeable.close();
            }
        }
    }

    /** Runs one case of {@link LockCallModel} (a shrunk failure kept as a regression test) and asserts the model holds. */
    protected final void assertModelHolds(Case c) throws Exception {
        LockProvider second = createSecondInstance();
        try (ModelRunner runner = new ModelRunner(provider, second, prefix, slack())) {
            String failure = runner.run(c);
            assertThat(failure).as("%s", c.java()).isNull();
        }
        finally {
            if (second != provider && second instanceof AutoCloseable closeable) {
                closeable.close();
            }
        }
    }

    /** Shrunk from the generated cases: a WRITE nested in a REENTRANT hold ran as if it held the key against readers. */
    @Test
    protected void aWriteNestedInAReentrantHoldDoesNotRunAsIfItExcludedReaders() throws Exception {
        assertModelHolds(new Case(null, List.of(
                new Call(List.of("a"), Shape.BLOCKING, Opts.DEFAULT),
                new Call(List.of("a"), Shape.BLOCKING, Opts.DEFAULT.withType(LockType.WRITE)))));
    }
}

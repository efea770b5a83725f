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
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
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
 * thread), interrupted waiters that leave nothing behind, fencing tokens seen by the guarded code, and undeclared
 * options refused. Providers don't implement these themselves; this suite shows that the template's way of using the
 * SPI works on theirs.
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
            public CompletableFuture<LockHandle> acquire(LockRequest request) {
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
}

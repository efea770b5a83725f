package io.github.distlock.generated;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockContext;
import io.github.distlock.generated.Probe.Mode;
import io.github.distlock.it.LockTestApplication;
import io.github.distlock.it.RedisIntegrationTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ConfigurableApplicationContext;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code @DistributedLock} through real Spring proxies on a real Redis, against a small model: generated sequences of
 * calls over the {@link Palette} (every option and result shape), with the lock free, held by a second application
 * context (another instance), a failing body, a transaction that commits or rolls back, nesting through three beans,
 * cancellation, and both instances contending at once. For each case the model says whether the body ran, which
 * exception came back and that it names the key, or the skip value or the fallback's result; the {@link Probe} checks
 * that no two exclusive holders overlapped and that fencing tokens only grew; after each case nothing of the lock is
 * left in Redis and the pooled calling thread holds nothing.
 *
 * <p>CI runs a fixed seed and number of tries. A long random run:
 * {@code ./mvnw -pl autoconfigure -am verify -Dtest=AnnotatedCallsFollowTheModelTest -Dsurefire.failIfNoSpecifiedTests=false
 * -Ddistlock.generated.seed=random -Ddistlock.generated.tries=2000}; a failure prints the seed and the case, and
 * {@code -Ddistlock.generated.case=<n>} with that seed runs that case alone.
 */
@SpringBootTest(classes = {LockTestApplication.class, PaletteConfig.class},
        properties = {"palette.wait=30ms", "spring.datasource.url=jdbc:h2:mem:palette-a;DB_CLOSE_DELAY=-1"})
class AnnotatedCallsFollowTheModelTest extends RedisIntegrationTest {

    static final long SEED = seed();
    static final int TRIES = Integer.getInteger("distlock.generated.tries", 60);

    private static ConfigurableApplicationContext second;

    /** The pooled thread that serves every call: what one call leaves in its thread-locals, the next one sees. */
    private static final ExecutorService caller = Executors.newSingleThreadExecutor(r -> {
        Thread thread = new Thread(r, "pooled-caller");
        thread.setDaemon(true);
        return thread;
    });

    @Autowired
    Palette palette;

    @Autowired
    Nesting.Outer outer;

    @Autowired
    Ledger ledger;

    private static long seed() {
        String value = System.getProperty("distlock.generated.seed", "20261127");
        return value.equals("random") ? new Random().nextLong() : Long.parseLong(value);
    }

    @BeforeEach
    void startSecondInstance() {
        if (second == null) {
            second = new SpringApplicationBuilder(LockTestApplication.class, PaletteConfig.class)
                    .web(WebApplicationType.NONE)
                    .properties("spring.data.redis.host=" + redis.server().host(), "spring.data.redis.port=" + redis.port(),
                            "palette.wait=30ms", "spring.datasource.url=jdbc:h2:mem:palette-b;DB_CLOSE_DELAY=-1",
                            "spring.main.banner-mode=off")
                    .run();
        }
    }

    @AfterAll
    static void stopSecondInstance() {
        if (second != null) {
            second.close();
            second = null;
        }
    }

    // ---------------------------------------------------------------- the palette as the model sees it

    enum Shape { SYNC, STAGE, MONO, FLUX }

    enum WhenHeld { THROW, SKIP, FALLBACK }

    interface Call {
        Object invoke(Palette palette, String k, Mode mode);
    }

    /**
     * One palette method: its shape, what it answers when its lock is held elsewhere, the probe key of its body, how
     * many holders exhaust it, and the method the other instance holds it with.
     */
    record Entry(String name, Shape shape, WhenHeld whenHeld, String prefix, int holders, Call call, Call holder) {

        Entry(String name, Shape shape, WhenHeld whenHeld, String prefix, Call call) {
            this(name, shape, whenHeld, prefix, 1, call, call);
        }

        String probeKey(String k) {
            return prefix + k;
        }

        @Override
        public String toString() {
            return name;
        }
    }

    static final List<Entry> PALETTE = List.of(
            new Entry("reentrant", Shape.SYNC, WhenHeld.THROW, "re:", Palette::reentrant),
            new Entry("fair", Shape.SYNC, WhenHeld.THROW, "fair:", Palette::fair),
            new Entry("writeFenced", Shape.SYNC, WhenHeld.THROW, "rw:", Palette::writeFenced),
            new Entry("read", Shape.SYNC, WhenHeld.THROW, "rw:", 1, Palette::read, Palette::writeFenced),
            new Entry("skip", Shape.SYNC, WhenHeld.SKIP, "skip:", Palette::skip),
            new Entry("fairForever", Shape.SYNC, WhenHeld.THROW, "fairever:", Palette::fairForever),
            new Entry("reentrantForever", Shape.SYNC, WhenHeld.THROW, "reever:", Palette::reentrantForever),
            new Entry("writeForever", Shape.SYNC, WhenHeld.THROW, "rwever:", Palette::writeForever),
            new Entry("permitsForever", Shape.SYNC, WhenHeld.THROW, "semever:", 2, Palette::permitsForever,
                    Palette::permitsForever),
            new Entry("skipOptional", Shape.SYNC, WhenHeld.SKIP, "opt:", Palette::skipOptional),
            new Entry("withFallback", Shape.SYNC, WhenHeld.FALLBACK, "fb:", Palette::withFallback),
            new Entry("permits", Shape.SYNC, WhenHeld.THROW, "sem:", 2, Palette::permits, Palette::permits),
            new Entry("multi", Shape.SYNC, WhenHeld.THROW, "multi:", Palette::multi),
            new Entry("stage", Shape.STAGE, WhenHeld.THROW, "stage:", Palette::stage),
            new Entry("stageSkip", Shape.STAGE, WhenHeld.SKIP, "stageskip:", Palette::stageSkip),
            new Entry("mono", Shape.MONO, WhenHeld.THROW, "mono:", Palette::mono),
            new Entry("monoWithFallback", Shape.MONO, WhenHeld.FALLBACK, "monofb:", Palette::monoWithFallback),
            new Entry("fluxWrite", Shape.FLUX, WhenHeld.THROW, "rw:", Palette::fluxWrite),
            new Entry("fluxSkip", Shape.FLUX, WhenHeld.SKIP, "fluxskip:", Palette::fluxSkip));

    enum Scenario { FREE, BODY_FAILS, HELD_ELSEWHERE, TX_COMMIT, TX_ROLLBACK, NESTED, NESTED_INNER_HELD, CANCELLED, CONTENDED }

    /** One generated case: what is called, in which situation; {@code depth} and {@code same} for nesting. */
    record Case(int index, Scenario scenario, Entry entry, int depth, boolean same) {

        String key() {
            return "c" + index;
        }

        @Override
        public String toString() {
            return "#" + index + " " + scenario + " " + entry
                    + ((scenario == Scenario.NESTED) ? " depth=" + depth + " same=" + same : "");
        }
    }

    /** The scenarios to draw from: all, or those named in {@code distlock.generated.scenarios} (to shrink a failure). */
    static final List<Scenario> SCENARIOS = System.getProperty("distlock.generated.scenarios") == null
            ? List.of(Scenario.values())
            : java.util.Arrays.stream(System.getProperty("distlock.generated.scenarios").split(","))
                    .map(String::strip).map(Scenario::valueOf).toList();

    /** The palette methods to draw from: all, or those named in {@code distlock.generated.entries}. */
    static final List<Entry> ENTRIES = System.getProperty("distlock.generated.entries") == null ? PALETTE
            : PALETTE.stream().filter(e -> List.of(System.getProperty("distlock.generated.entries").split(","))
                    .contains(e.name())).toList();

    static Case generate(Random random, int index) {
        Scenario scenario = SCENARIOS.get(random.nextInt(SCENARIOS.size()));
        Entry entry = ENTRIES.get(random.nextInt(ENTRIES.size()));
        if (scenario == Scenario.TX_COMMIT || scenario == Scenario.TX_ROLLBACK) {
            // a thread-bound transaction: the shapes whose method runs on the caller's thread
            List<Entry> inline = ENTRIES.stream().filter(e -> e.shape() == Shape.SYNC || e.shape() == Shape.STAGE).toList();
            entry = inline.get(random.nextInt(inline.size()));
        }
        return new Case(index, scenario, entry, 1 + random.nextInt(3), random.nextBoolean());
    }

    /** What a call gave: its value (a stage, Mono or Flux awaited) or what it threw. */
    record Outcome(Object value, Throwable failure) {

        static Outcome of(Entry entry, Call call, Palette palette, String k, Mode mode) {
            try {
                return new Outcome(settle(call.invoke(palette, k, mode)), null);
            }
            catch (Throwable ex) {
                return new Outcome(null, unwrap(ex));
            }
        }

        static Object settle(Object raw) throws Exception {
            if (raw instanceof CompletionStage<?> stage) {
                return stage.toCompletableFuture().get(15, TimeUnit.SECONDS);
            }
            if (raw instanceof Mono<?> mono) {
                return mono.block(Duration.ofSeconds(15));
            }
            if (raw instanceof Flux<?> flux) {
                return flux.collectList().block(Duration.ofSeconds(15));
            }
            return raw;
        }

        static Throwable unwrap(Throwable ex) {
            while ((ex instanceof ExecutionException || ex instanceof CompletionException) && ex.getCause() != null) {
                ex = ex.getCause();
            }
            return ex;
        }
    }

    // ---------------------------------------------------------------- the run

    @Test
    @SuppressWarnings("unchecked")
    void generatedCallsFollowTheModel() throws Exception {
        Random random = new Random(SEED);
        String only = System.getProperty("distlock.generated.case");
        List<Case> cases = new ArrayList<>();
        for (int i = 0; i < TRIES; i++) {
            cases.add(generate(random, i));
        }
        for (Case c : cases) {
            if (only != null && c.index() != Integer.parseInt(only)) {
                continue;
            }
            long start = System.nanoTime();
            try {
                check(c);
            }
            catch (Throwable failure) {
                throw new AssertionError("seed " + SEED + ", case " + c + " (run it alone with -Ddistlock.generated.seed="
                        + SEED + " -Ddistlock.generated.case=" + c.index() + "): " + failure.getMessage(), failure);
            }
            if (Boolean.getBoolean("distlock.generated.verbose")) {
                System.out.println("case " + c + ": " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) + " ms");
            }
        }
    }

    @SuppressWarnings("unchecked")
    void check(Case c) throws Exception {
        Palette other = second.getBean(Palette.class);
        Probe probe = Probe.INSTANCE;
        switch (c.scenario()) {
            case FREE -> {
                Outcome outcome = onCaller(() -> Outcome.of(c.entry(), c.entry().call(), palette, c.key(), Mode.RUN));
                assertRan(c, outcome);
            }
            case BODY_FAILS -> {
                Outcome outcome = onCaller(() -> Outcome.of(c.entry(), c.entry().call(), palette, c.key(), Mode.FAIL));
                assertThat(outcome.failure()).as("the body's own failure comes back").isInstanceOf(Probe.BodyFailure.class)
                        .hasMessage("body failed on " + c.entry().probeKey(c.key()));
            }
            case HELD_ELSEWHERE -> {
                String holderKey = c.entry().probeKey(c.key());
                List<CompletableFuture<Outcome>> holders = new ArrayList<>();
                for (int i = 0; i < c.entry().holders(); i++) {
                    holders.add(CompletableFuture.supplyAsync(
                            () -> Outcome.of(c.entry(), c.entry().holder(), other, c.key(), Mode.HOLD), newThread()));
                    assertThat(probe.awaitHeld(holderKey, i + 1)).as("the other instance holds " + holderKey).isTrue();
                }
                int runsBefore = probe.runs(holderKey);
                Outcome outcome = onCaller(() -> Outcome.of(c.entry(), c.entry().call(), palette, c.key(), Mode.RUN));
                assertThat(probe.runs(holderKey)).as("the body did not run without its lock").isEqualTo(runsBefore);
                probe.release(holderKey);
                for (CompletableFuture<Outcome> holder : holders) {
                    assertThat(holder.get(15, TimeUnit.SECONDS).failure()).as("the holder's own call").isNull();
                }
                assertNotAcquired(c, outcome);
            }
            case TX_COMMIT, TX_ROLLBACK -> {
                boolean rollback = c.scenario() == Scenario.TX_ROLLBACK;
                java.util.concurrent.atomic.AtomicReference<List<String>> inRedis = new java.util.concurrent.atomic.AtomicReference<>();
                List<Object> seen = onCaller(() -> {
                    Outcome outcome;
                    try {
                        outcome = new Outcome(Outcome.settle(ledger.inTransaction(c.key(), rollback, () -> {
                            Object result = c.entry().call().invoke(palette, c.key(), Mode.RUN);
                            // still inside the transaction: what Redis holds for the key now
                            inRedis.set(redisCommands.keys("*" + c.entry().probeKey(c.key()) + "*").stream()
                                    .filter(k -> !k.startsWith("redisson_lock_token")).toList());
                            return result;
                        })), null);
                    }
                    catch (Throwable ex) {
                        outcome = new Outcome(null, Outcome.unwrap(ex));
                    }
                    List<String> heldInside = Ledger.HELD_AFTER_CALL.get();
                    Ledger.HELD_AFTER_CALL.remove();
                    return List.of(outcome, heldInside);
                });
                Outcome outcome = (Outcome) seen.get(0);
                if (rollback) {
                    assertThat(outcome.failure()).isInstanceOf(IllegalStateException.class).hasMessage("rolled back " + c.key());
                }
                else {
                    assertRan(c, outcome);
                }
                assertThat(ledger.rows(c.key())).as("the row follows the transaction").isEqualTo(rollback ? 0 : 1);
                if (c.entry().shape() == Shape.SYNC) {
                    assertThat(inRedis.get()).as("the lock taken inside the transaction is held in Redis until it ends")
                            .isNotEmpty();
                    assertThat((List<Object>) seen.get(1)).as("the lock taken inside the transaction is held until it ends")
                            .contains("lock:" + c.entry().probeKey(c.key()));
                }
                // a stage's lock is released when its work completes, not with the transaction (README: asynchronous
                // calls); that it is released at all is checked below
            }
            case NESTED -> {
                Outcome outcome = onCaller(() -> Outcome.of(c.entry(), (p, k, m) -> outer.one(k, c.depth(), c.same(), m),
                        palette, c.key(), Mode.RUN));
                assertThat(outcome.failure()).as("nested call").isNull();
                assertThat(outcome.value()).isEqualTo(switch (c.depth()) {
                    case 1 -> "one()";
                    case 2 -> "one(two())";
                    default -> "one(two(three))";
                });
                List<Nesting.Seen> seen = Nesting.SEEN.remove(c.key());
                assertThat(seen).hasSize(c.depth());
                if (c.depth() == 3) {
                    Nesting.Seen two = seen.get(1);
                    Nesting.Seen three = seen.get(2);
                    assertThat(three.heldKeys()).contains("lock:n1:" + c.key(), "lock:n2:" + c.key());
                    assertThat(three.token()).as("the innermost fenced lock's token").isEqualTo(two.token());
                    if (!c.same()) {
                        assertThat(three.heldKeys()).contains("lock:n3:" + c.key());
                    }
                }
            }
            case NESTED_INNER_HELD -> {
                String innerKey = "n3:" + c.key();
                Nesting.Inner otherInner = second.getBean(Nesting.Inner.class);
                CompletableFuture<Outcome> holder = CompletableFuture.supplyAsync(() -> Outcome.of(c.entry(),
                        (p, k, m) -> otherInner.three(k, false, m), other, c.key(), Mode.HOLD), newThread());
                assertThat(probe.awaitHeld(innerKey, 1)).isTrue();
                Outcome outcome = onCaller(() -> Outcome.of(c.entry(), (p, k, m) -> outer.one(k, 3, false, m), palette,
                        c.key(), Mode.RUN));
                probe.release(innerKey);
                assertThat(holder.get(15, TimeUnit.SECONDS).failure()).isNull();
                Nesting.SEEN.remove(c.key());
                assertThat(outcome.failure()).as("the innermost refusal reaches the outermost caller")
                        .isInstanceOf(LockAcquisitionException.class).hasMessageContaining("'lock:" + innerKey + "'");
            }
            case CANCELLED -> {
                List<Long> first = onCaller(() -> palette.endless(c.key()).take(3).collectList().block(Duration.ofSeconds(15)));
                assertThat(first).hasSize(3);
                // the cancellation's release is asynchronous: the next subscription tries once (waitTime = 0), so it
                // comes only once the release is seen in Redis
                assertNothingLeft(c);
                Disposable disposable = onCaller(() -> palette.endless(c.key()).subscribe());
                await().atMost(Duration.ofSeconds(10)).until(() -> probe.runs("rw:" + c.key()) == 2);
                disposable.dispose();
                assertNothingLeft(c);
                Outcome afterwards = Outcome.of(c.entry(), Palette::fluxWrite, other, c.key(), Mode.RUN);
                assertThat(afterwards.failure()).as("the other instance gets the key after the cancellations").isNull();
            }
            case CONTENDED -> {
                CompletableFuture<Outcome> theirs = CompletableFuture.supplyAsync(
                        () -> Outcome.of(c.entry(), c.entry().call(), other, c.key(), Mode.RUN), newThread());
                Outcome mine = onCaller(() -> Outcome.of(c.entry(), c.entry().call(), palette, c.key(), Mode.RUN));
                for (Outcome outcome : List.of(mine, theirs.get(15, TimeUnit.SECONDS))) {
                    if (ran(c, outcome)) {
                        assertRan(c, outcome);
                    }
                    else {
                        assertNotAcquired(c, outcome);
                    }
                }
            }
        }
        assertNothingLeft(c);
    }

    private static boolean ran(Case c, Outcome outcome) {
        Object value = outcome.value();
        if (value instanceof Optional<?> optional) {
            value = optional.orElse(null);
        }
        if (value instanceof List<?> list && !list.isEmpty()) {
            value = list.get(0);
        }
        return outcome.failure() == null && value instanceof String text && !text.startsWith("fallback:");
    }

    private static void assertRan(Case c, Outcome outcome) {
        assertThat(outcome.failure()).as("a free lock lets the body run").isNull();
        Object value = outcome.value();
        if (value instanceof Optional<?> optional) {
            value = optional.orElseThrow();
        }
        if (c.entry().shape() == Shape.FLUX) {
            assertThat((List<?>) value).isNotEmpty();
        }
        else {
            assertThat((String) value).endsWith(":" + c.entry().probeKey(c.key()));
        }
    }

    private static void assertNotAcquired(Case c, Outcome outcome) {
        String key = c.entry().probeKey(c.key());
        switch (c.entry().whenHeld()) {
            case THROW -> assertThat(outcome.failure()).as("refused")
                    .isInstanceOf(LockAcquisitionException.class).hasMessageContaining("'lock:" + key);
            case SKIP -> {
                assertThat(outcome.failure()).as("skipped").isNull();
                Object value = outcome.value();
                assertThat(value == null || Optional.empty().equals(value) || (value instanceof List<?> l && l.isEmpty()))
                        .as("the skip value, was " + value).isTrue();
            }
            case FALLBACK -> {
                assertThat(outcome.failure()).as("fell back").isNull();
                assertThat((String) outcome.value()).startsWith("fallback:" + c.key());
            }
        }
    }

    /**
     * The probe saw no violation; nothing of the lock is left in Redis (a fencing counter and the instances' liveness
     * marks may stay, with an expiry);
     * the pooled thread that served the call holds nothing and sees no token.
     */
    private void assertNothingLeft(Case c) throws Exception {
        assertThat(Probe.INSTANCE.violations()).as("what the bodies saw").isEmpty();
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(leftBehind()).as("keys left in Redis").isEmpty());
        List<Object> thread = onCaller(() -> List.of(LockContext.heldKeys(), LockContext.fencingToken()));
        assertThat((List<?>) thread.get(0)).as("locks the pooled thread still holds").isEmpty();
        assertThat(thread.get(1)).as("the token the pooled thread still sees").isEqualTo(java.util.OptionalLong.empty());
    }

    private static List<String> leftBehind() {
        List<String> left = new ArrayList<>();
        for (String key : redisCommands.keys("*")) {
            // a fencing counter and each instance's liveness mark stay, with an expiry: neither is a held lock
            if ((key.startsWith("redisson_lock_token") || key.startsWith("distlock:instance:"))
                    && redisCommands.pttl(key) > 0) {
                continue;
            }
            left.add(key + " (pttl " + redisCommands.pttl(key) + ")");
        }
        return left;
    }

    interface Task<T> {
        T call() throws Exception;
    }

    private static <T> T onCaller(Task<T> task) throws Exception {
        try {
            return caller.submit(task::call).get(30, TimeUnit.SECONDS);
        }
        catch (ExecutionException ex) {
            throw (ex.getCause() instanceof Exception cause) ? cause : ex;
        }
    }

    private static java.util.concurrent.Executor newThread() {
        return runnable -> {
            Thread thread = new Thread(runnable, "other-instance");
            thread.setDaemon(true);
            thread.start();
        };
    }
}

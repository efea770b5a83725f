package io.github.distlock.actuate;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import com.jayway.jsonpath.JsonPath;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.RedisServerExtension;
import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Generated cases for the actuator endpoint on a real Redis, two instances (two Redisson clients): random holders of
 * every lock type ({@code REENTRANT}, {@code FAIR} with a queued waiter, several {@code READ}, {@code WRITE} and the
 * writer's own read, fenced, permits) by several owners, then lookups, force releases by a holder, by a stranger and
 * by nobody, and releases. After every step the holders are checked three ways: against a small model, against Redis
 * read directly ({@link RedisHolders}), and against the endpoint's {@code GET}; after every force release a third owner
 * tries each kind of lock and gets exactly what the model says is free.
 *
 * <p>CI runs {@value #DEFAULT_CASES} cases from seed {@value #DEFAULT_SEED}. A long random run:
 * {@code ./mvnw -pl autoconfigure -am verify -Dtest=EndpointSeesAndReleasesEveryHoldGeneratedTest
 * -Dsurefire.failIfNoSpecifiedTests=false -Ddistlock.generated.seed=random -Ddistlock.generated.cases=2000}
 * (the seed is printed). A failing case is shrunk (steps left out while it still fails) and reported with its seed
 * and its minimal steps, to be kept as a named regression test (see {@link ForceReleaseOfOneHolderTest}).
 */
class EndpointSeesAndReleasesEveryHoldGeneratedTest {

    static final long DEFAULT_SEED = 24;

    static final int DEFAULT_CASES = 30;

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    static TwoInstances apps;

    /** Key shapes: plain, a hash tag, and characters a URL or a Lua pattern treats specially. */
    private static final List<String> KEY_SHAPES = List.of("gen:%d", "gen:{tenant-%d}:order", "gen:%d:with space",
            "gen:ü-%d", "gen:%d/slash/ed", "gen:%d%%percent", "gen:%d+plus", "gen:%d:[-].*?", "gen:%d:a#b", "gen:%d;jsessionid=1");

    private int keys;

    /** What the cases covered, printed at the end: a run that drew no close or no odd key says so. */
    private final java.util.Map<String, Integer> covered = new java.util.TreeMap<>();

    @BeforeAll
    static void start() {
        apps = TwoInstances.start(redis);
    }

    @AfterAll
    static void stop() {
        if (apps != null) {
            apps.close();
        }
    }

    @Test
    void theEndpointSeesAndForceReleasesExactlyWhatRedisHolds() {
        String seedProperty = System.getProperty("distlock.generated.seed", String.valueOf(DEFAULT_SEED));
        long seed = seedProperty.equals("random") ? new Random().nextLong() : Long.parseLong(seedProperty);
        int cases = Integer.getInteger("distlock.generated.cases", DEFAULT_CASES);
        System.out.println("EndpointSeesAndReleasesEveryHoldGeneratedTest: seed " + seed + ", " + cases + " cases");
        Random random = new Random(seed);
        for (int i = 0; i < cases; i++) {
            List<Step> steps = Step.plan(random);
            String shape = KEY_SHAPES.get(random.nextInt(KEY_SHAPES.size()));
            AssertionError failure = run(shape, steps);
            if (failure != null) {
                List<Step> minimal = shrink(shape, steps);
                AssertionError minimalFailure = run(shape, minimal);
                throw new AssertionError("seed " + seed + ", case " + i + ", key shape '" + shape + "' fails; shrunk to "
                        + minimal.size() + " steps:\n  " + String.join("\n  ", minimal.stream().map(Step::toString)
                                .toList()) + "\nwith: " + ((minimalFailure != null) ? minimalFailure.getMessage()
                                        : failure.getMessage()), (minimalFailure != null) ? minimalFailure : failure);
            }
            covered.merge("key " + shape, 1, Integer::sum);
            steps.forEach(step -> covered.merge(step.kind().name(), 1, Integer::sum));
        }
        System.out.println("EndpointSeesAndReleasesEveryHoldGeneratedTest covered: " + covered);
    }

    /** Leaves steps out, one at a time, while the case still fails. */
    private List<Step> shrink(String shape, List<Step> steps) {
        List<Step> current = new ArrayList<>(steps);
        boolean smaller = true;
        while (smaller) {
            smaller = false;
            for (int i = current.size() - 1; i >= 0; i--) {
                List<Step> without = new ArrayList<>(current);
                without.remove(i);
                if (run(shape, without) != null) {
                    current = without;
                    smaller = true;
                }
            }
        }
        return current;
    }

    /** Runs {@code steps} on a fresh key; the first disagreement, or {@code null}. Leaves nothing held. */
    private AssertionError run(String shape, List<Step> steps) {
        String key = "lock:" + shape.formatted(++keys);
        Case running = new Case(key);
        try {
            for (Step step : steps) {
                running.log.add(step.toString());
                running.apply(step);
                running.check();
            }
            running.releaseAll();
            running.check();
            return null;
        }
        catch (AssertionError ex) {
            return new AssertionError("key '" + key + "' after steps " + running.log + ": " + ex.getMessage(), ex);
        }
        finally {
            running.cleanUp();
        }
    }

    // ---------------------------------------------------------------- the steps

    enum Kind {
        ACQUIRE, QUEUE_FAIR_WAITER, RELEASE, LOOKUP, RELEASE_BY_HOLDER, RELEASE_BY_STRANGER, RELEASE_BY_NOBODY, CLOSE,
        EXPIRED_READER
    }

    /**
     * One step, as data: picks ({@code pick}) are resolved against the holders at run time, so that a step left out
     * by the shrinking still means something.
     */
    record Step(Kind kind, int app, LockType type, boolean fenced, int permits, boolean watchdog, int pick) {

        static List<Step> plan(Random random) {
            List<Step> steps = new ArrayList<>();
            int holds = 1 + random.nextInt(6);
            for (int i = 0; i < holds; i++) {
                steps.add(acquire(random));
            }
            int operations = 1 + random.nextInt(5);
            for (int i = 0; i < operations; i++) {
                int dice = random.nextInt(22);
                Kind kind = (dice < 4) ? Kind.ACQUIRE : (dice < 6) ? Kind.QUEUE_FAIR_WAITER : (dice < 8) ? Kind.RELEASE
                        : (dice < 9) ? Kind.LOOKUP : (dice < 14) ? Kind.RELEASE_BY_HOLDER
                                : (dice < 16) ? Kind.RELEASE_BY_STRANGER : (dice < 19) ? Kind.RELEASE_BY_NOBODY
                                        : (dice < 20) ? Kind.CLOSE : Kind.EXPIRED_READER;
                steps.add((kind == Kind.ACQUIRE) ? acquire(random)
                        : new Step(kind, random.nextInt(2), null, false, 1, true, random.nextInt(1000)));
            }
            return steps;
        }

        private static Step acquire(Random random) {
            int dice = random.nextInt(12);
            // a read by the writer's own owner (pick < 300, when there is a writer) re-enters its write lock
            LockType type = (dice < 2) ? LockType.REENTRANT : (dice < 4) ? LockType.FAIR : (dice < 7) ? LockType.READ
                    : (dice < 9) ? LockType.WRITE : LockType.REENTRANT;
            int permits = (dice >= 9) ? 2 + random.nextInt(2) : 1;
            boolean fenced = permits == 1 && type != LockType.READ && random.nextInt(3) == 0;
            return new Step(Kind.ACQUIRE, random.nextInt(2), type, fenced, permits, random.nextBoolean(),
                    random.nextInt(1000));
        }

        @Override
        public String toString() {
            return switch (kind) {
                case ACQUIRE -> "acquire " + type + (fenced ? " fenced" : "") + (permits > 1 ? " permits=" + permits : "")
                        + (watchdog ? " watchdog" : " lease=60s") + " on " + (app == 0 ? "alpha" : "beta")
                        + " (pick " + pick + ")";
                default -> kind.name().toLowerCase(java.util.Locale.ROOT) + " via " + (app == 0 ? "alpha" : "beta")
                        + " (pick " + pick + ")";
            };
        }
    }

    // ---------------------------------------------------------------- one case: the model and its checks

    /** A hold in the model. */
    record Hold(String owner, String mode, int permits, LockType type, boolean watchdog, LockHandle handle) {
    }

    private final class Case {

        final String key;
        final List<String> log = new ArrayList<>();
        final List<Hold> holds = new ArrayList<>();
        /** Handles evicted by a force release: their release must report the lock lost. */
        final List<LockHandle> evicted = new ArrayList<>();
        final Set<String> pastOwners = new HashSet<>();
        final Set<String> counters = new HashSet<>();
        /** Readers whose lease ran out: what their release answers is Redisson's read unlock's business. */
        final List<LockHandle> expired = new ArrayList<>();
        CompletableFuture<LockHandle> fairWaiter;
        String fairWaiterOwner;
        boolean closed;

        Case(String key) {
            this.key = key;
        }

        WebApp app(int index) {
            return (index == 0) ? apps.alpha : apps.beta;
        }

        void apply(Step step) {
            switch (step.kind()) {
                case ACQUIRE -> acquire(step);
                case QUEUE_FAIR_WAITER -> queueFairWaiter(step);
                case RELEASE -> {
                    if (!holds.isEmpty()) {
                        Hold hold = holds.get(step.pick() % holds.size());
                        assertThat(hold.handle().release()).as("release of a hold the model has").isTrue();
                        holds.remove(hold);
                        pastOwners.add(hold.owner());
                        if (hold.mode().equals("exclusive")) {
                            fairWaiterTakesOver();
                        }
                    }
                }
                case LOOKUP -> check();
                case RELEASE_BY_HOLDER -> {
                    if (!holds.isEmpty()) {
                        forceRelease(step, holds.get(step.pick() % holds.size()).owner());
                    }
                }
                case RELEASE_BY_STRANGER -> {
                    List<String> strangers = new ArrayList<>(List.of(
                            TwoInstances.owner(app(step.app()), LockOwner.next())));
                    pastOwners.stream().filter(owner -> holds.stream().noneMatch(hold -> hold.owner().equals(owner)))
                            .sorted().forEach(strangers::add);
                    if (fairWaiterOwner != null) {
                        strangers.add(fairWaiterOwner);
                    }
                    forceRelease(step, strangers.get(step.pick() % strangers.size()));
                }
                case RELEASE_BY_NOBODY -> forceRelease(step, null);
                case CLOSE -> close(step);
                case EXPIRED_READER -> expiredReader(step);
            }
        }

        private void acquire(Step step) {
            WebApp app = app(step.app());
            LockOwner owner = LockOwner.next();
            Hold writer = holds.stream().filter(hold -> hold.mode().equals("write")).findFirst().orElse(null);
            boolean writersRead = step.type() == LockType.READ && writer != null && step.pick() < 300
                    && holds.stream().noneMatch(hold -> hold.mode().equals("read") && hold.owner().equals(writer.owner()));
            String ownerName;
            if (writersRead) {
                app = writer.owner().startsWith(TwoInstances.provider(apps.alpha).clientId()) ? apps.alpha : apps.beta;
                owner = new LockOwner(Long.parseLong(writer.owner().substring(writer.owner().lastIndexOf(':') + 1)));
                ownerName = writer.owner();
            }
            else {
                ownerName = TwoInstances.owner(app, owner);
            }
            String mode = (step.permits() > 1) ? "permit" : switch (step.type()) {
                case REENTRANT, FAIR -> "exclusive";
                case READ -> "read";
                case WRITE -> "write";
            };
            boolean expected = switch (mode) {
                case "exclusive" -> holds.stream().noneMatch(hold -> hold.mode().equals("exclusive"));
                case "write" -> holds.stream().noneMatch(hold -> hold.mode().equals("read") || hold.mode().equals("write"));
                case "read" -> writer == null || writersRead;
                default -> holds.stream().filter(hold -> hold.mode().equals("permit")).count() < holds.stream()
                        .filter(hold -> hold.mode().equals("permit")).mapToInt(Hold::permits)
                        .reduce(step.permits(), Math::min);
            };
            if (closed && (step.type() == LockType.FAIR || step.permits() > 1)) {
                try {
                    TwoInstances.tryLock(app, key, step.type(), owner, 0, step.fenced(), step.permits());
                    throw new AssertionError("a FAIR or permit acquisition of a closed key was not refused");
                }
                catch (IllegalStateException ex) {
                    assertThat(ex).hasRootCauseInstanceOf(io.github.distlock.LockKeyClosedException.class);
                }
                return;
            }
            LockHandle handle = TwoInstances.tryLock(app, key, step.type(), owner, step.watchdog() ? 0 : 60_000,
                    step.fenced(), step.permits());
            assertThat(handle != null).as("granted: " + step + " with holders " + holds).isEqualTo(expected);
            if (handle != null) {
                holds.add(new Hold(ownerName, mode, step.permits(), step.type(), step.watchdog(), handle));
                if (step.fenced()) {
                    counters.add(step.type() == LockType.WRITE ? "redisson_lock_token:" + RedisHolders.readWriteKey(key)
                            : key.contains("{") ? "redisson_lock_token:" + key : "redisson_lock_token:{" + key + "}");
                }
            }
        }

        /**
         * Closes the key for FAIR locks and permits: holders keep their locks, a queued FAIR waiter is refused, and so
         * is every later FAIR or permit acquisition until the case ends (reopened in {@link #cleanUp}).
         */
        private void close(Step step) {
            TwoInstances.provider(app(step.app())).closeKey(key, "generated close");
            closed = true;
            if (fairWaiter != null) {
                CompletableFuture<LockHandle> waiter = fairWaiter;
                fairWaiter = null;
                fairWaiterOwner = null;
                try {
                    waiter.get(15, TimeUnit.SECONDS);
                    throw new AssertionError("a queued FAIR waiter was not refused when the key was closed");
                }
                catch (java.util.concurrent.ExecutionException ex) {
                    assertThat(ex).hasRootCauseInstanceOf(io.github.distlock.LockKeyClosedException.class);
                }
                catch (InterruptedException | java.util.concurrent.TimeoutException ex) {
                    throw new AssertionError("a queued FAIR waiter was not told of the close: " + ex, ex);
                }
            }
        }

        /**
         * A reader with a lease of 100 ms beside the others, once its lease ran out in Redis: no holder any more, though
         * its field stays in the read/write hash while other readers keep it alive (a watchdog reader renews only its
         * own lease keys). Not beside a writer, who keeps readers out.
         */
        private void expiredReader(Step step) {
            if (holds.stream().anyMatch(hold -> hold.mode().equals("write"))) {
                return;
            }
            LockOwner owner = LockOwner.next();
            LockHandle handle = TwoInstances.tryLock(app(step.app()), key, LockType.READ, owner, 100, false, 1);
            assertThat(handle).as("a reader beside readers").isNotNull();
            String name = TwoInstances.owner(app(step.app()), owner);
            try (RespClient client = RespClient.connect(redis.port())) {
                org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(10)).until(() -> RedisHolders
                        .of(client, key).stream().noneMatch(holder -> holder.owner().equals(name)));
            }
            expired.add(handle);
            pastOwners.add(name);
        }

        private void queueFairWaiter(Step step) {
            // only behind a FAIR holder: a REENTRANT release does not hand the lock on (the waiter would find it by polling)
            boolean fairHeld = holds.stream().anyMatch(hold -> hold.mode().equals("exclusive")
                    && hold.type() == LockType.FAIR);
            if (fairWaiter != null || !fairHeld || closed) {
                return;
            }
            WebApp app = app(step.app());
            LockOwner owner = LockOwner.next();
            fairWaiterOwner = TwoInstances.owner(app, owner);
            fairWaiter = TwoInstances.provider(app).acquire(new LockRequest(key, TimeUnit.SECONDS.toNanos(30), 0, false,
                    LockType.FAIR, owner));
        }

        /** The exclusive hold ended: a queued FAIR waiter is handed the lock. */
        private void fairWaiterTakesOver() {
            if (fairWaiter == null) {
                return;
            }
            LockHandle handle;
            try {
                handle = fairWaiter.get(15, TimeUnit.SECONDS);
            }
            catch (Exception ex) {
                throw new AssertionError("the queued FAIR waiter was not handed the lock: " + ex, ex);
            }
            assertThat(handle).as("the queued FAIR waiter gets the lock").isNotNull();
            holds.add(new Hold(fairWaiterOwner, "exclusive", 1, LockType.FAIR, true, handle));
            fairWaiter = null;
            fairWaiterOwner = null;
        }

        private void forceRelease(Step step, String owner) {
            WebApp app = app(step.app());
            List<Hold> named = holds.stream().filter(hold -> owner == null || hold.owner().equals(owner)).toList();
            WebApp.Response response = app.delete("/actuator/distlock/" + path(key)
                    + ((owner != null) ? "?owner=" + URLEncoder.encode(owner, StandardCharsets.UTF_8) : ""));
            if (owner != null && named.isEmpty()) {
                assertThat(response.status()).as("status of " + step + ": " + response.body()).isEqualTo(409);
                assertThat(JsonPath.<Boolean>read(response.body(), "$.released")).isFalse();
                assertThat(holders(JsonPath.read(response.body(), "$.holders"))).as("holders now, in " + response.body())
                        .isEqualTo(expected(holds));
            }
            else {
                assertThat(response.status()).as("status of " + step + ": " + response.body()).isEqualTo(200);
                assertThat(JsonPath.<Boolean>read(response.body(), "$.released")).as(response.body())
                        .isEqualTo(!named.isEmpty());
                assertThat(holders(JsonPath.read(response.body(), "$.evicted"))).as("evicted, in " + response.body())
                        .isEqualTo(expected(named));
                boolean exclusiveGone = named.stream().anyMatch(hold -> hold.mode().equals("exclusive"));
                holds.removeAll(named);
                named.forEach(hold -> {
                    evicted.add(hold.handle());
                    pastOwners.add(hold.owner());
                });
                if (exclusiveGone) {
                    fairWaiterTakesOver();
                }
            }
            check();
            thirdOwnerGetsWhatIsFree(app);
        }

        /** A stranger tries each kind once: granted exactly when the model says that kind is free. */
        private void thirdOwnerGetsWhatIsFree(WebApp app) {
            boolean exclusiveFree = holds.stream().noneMatch(hold -> hold.mode().equals("exclusive"));
            boolean writeFree = holds.stream().noneMatch(hold -> hold.mode().equals("read") || hold.mode().equals("write"));
            boolean readFree = holds.stream().noneMatch(hold -> hold.mode().equals("write"));
            long permitHolders = holds.stream().filter(hold -> hold.mode().equals("permit")).count();
            int permitLimit = holds.stream().filter(hold -> hold.mode().equals("permit")).mapToInt(Hold::permits)
                    .reduce(3, Math::min);
            probe(app, LockType.REENTRANT, 1, exclusiveFree);
            probe(app, LockType.WRITE, 1, writeFree);
            probe(app, LockType.READ, 1, readFree);
            if (closed) {
                assertThatThrownBy(() -> TwoInstances.tryLock(app, key, LockType.REENTRANT, LockOwner.next(), 60_000,
                        false, 3)).as("a third owner's permit on a closed key")
                        .hasRootCauseInstanceOf(io.github.distlock.LockKeyClosedException.class);
            }
            else {
                probe(app, LockType.REENTRANT, 3, permitHolders < permitLimit);
            }
        }

        private void probe(WebApp app, LockType type, int permits, boolean free) {
            LockHandle handle = TwoInstances.tryLock(app, key, type, LockOwner.next(), 60_000, false, permits);
            assertThat(handle != null).as("a third owner's " + type + (permits > 1 ? " permit" : "") + " granted, with "
                    + "holders " + holds).isEqualTo(free);
            if (handle != null) {
                assertThat(handle.release()).isTrue();
            }
        }

        /** Redis, read directly, and the endpoint's lookup (through either instance) agree with the model. */
        void check() {
            List<String> expected = expected(holds);
            try (RespClient client = RespClient.connect(redis.port())) {
                assertThat(RedisHolders.of(client, key).stream().map(holder -> holder.owner() + " " + holder.mode())
                        .sorted().toList()).as("holders in Redis").isEqualTo(expected);
                for (String counter : counters) {
                    assertThat(client.call("EXISTS", counter)).as("fencing counter " + counter).isEqualTo(1L);
                }
            }
            for (WebApp app : List.of(apps.alpha, apps.beta)) {
                WebApp.Response found = app.get("/actuator/distlock/" + path(key));
                assertThat(found.status()).as("lookup: " + found.body()).isEqualTo(200);
                assertThat(JsonPath.<String>read(found.body(), "$.key")).isEqualTo(key);
                assertThat(holders(JsonPath.read(found.body(), "$.holders"))).as("holders looked up: " + found.body())
                        .isEqualTo(expected);
                assertThat(JsonPath.<Boolean>read(found.body(), "$.held")).isEqualTo(!expected.isEmpty());
            }
        }

        void releaseAll() {
            for (Hold hold : List.copyOf(holds)) {
                assertThat(hold.handle().release()).as("release of " + hold).isTrue();
                holds.remove(hold);
                if (hold.mode().equals("exclusive")) {
                    fairWaiterTakesOver();
                }
            }
            for (Hold hold : List.copyOf(holds)) {
                assertThat(hold.handle().release()).as("release of " + hold).isTrue();
                holds.remove(hold);
            }
            for (LockHandle handle : evicted) {
                assertThat(handle.release()).as("an evicted holder's release reports the lock lost").isFalse();
            }
            evicted.clear();
        }

        /** Whatever a failed case left: released, the waiter stopped, the key deleted. */
        void cleanUp() {
            if (fairWaiter != null) {
                fairWaiter.cancel(false);
                fairWaiter.thenAccept(handle -> {
                    if (handle != null) {
                        handle.releaseAsync();
                    }
                });
            }
            for (Hold hold : holds) {
                try {
                    hold.handle().release();
                }
                catch (RuntimeException ex) {
                    // best effort
                }
            }
            for (LockHandle handle : expired) {
                handle.releaseAsync();
            }
            TwoInstances.provider(apps.alpha).forceRelease(key);
            if (closed) {
                TwoInstances.provider(apps.alpha).reopenKey(key);
            }
        }
    }

    private static List<String> expected(List<Hold> holds) {
        return holds.stream().map(hold -> hold.owner() + " " + hold.mode()).sorted().toList();
    }

    private static List<String> holders(List<Map<String, Object>> holders) {
        return holders.stream().map(holder -> holder.get("owner") + " " + holder.get("mode")).sorted(Comparator.naturalOrder())
                .toList();
    }

    /** The key as a URL path: each '/'-separated part encoded (the endpoint joins the parts with '/'). */
    static String path(String key) {
        return String.join("/", java.util.Arrays.stream(key.split("/", -1))
                .map(part -> URLEncoder.encode(part, StandardCharsets.UTF_8).replace("+", "%20")).toList());
    }
}

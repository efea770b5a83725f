package io.github.distlock.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;

import io.github.distlock.LockOptions;
import io.github.distlock.LockType;
import io.github.distlock.NestedLockException;
import org.jspecify.annotations.Nullable;

/**
 * Generated lock calls and the reference model of what each must do, for
 * {@link LockTemplateContractTest#everyGeneratedCallKeepsTheModelsPromises()}.
 *
 * <p>A {@link Case} is an optional call of a second instance that holds its keys while the case runs (the
 * {@linkplain Case#contender() contender}), and one to three calls of this instance nested in each other. Options are
 * drawn from their defaults, their extremes and the values around one millisecond; call shapes from blocking, "try",
 * asynchronous and inside a transaction that commits or rolls back. The model says, level by level, which outcomes are
 * allowed ({@link #allowed}); where the backend may legitimately answer either way (a lease short enough to run out
 * during the case, two lock families of one key, which some backends keep apart) it allows both.
 *
 * <p>Seeded and shrinking, without a test engine of its own: {@code -Ddistlock.model.seed=random} (or a number) and
 * {@code -Ddistlock.model.tries=5000} run it long; {@code -Ddistlock.model.extremes=false} leaves out the durations
 * at the edge of {@link Duration} and {@code long} nanoseconds.
 */
public final class LockCallModel {

    /** How a call is made. Nested levels are {@link #BLOCKING} or {@link #TRY}; the others only as the outermost. */
    public enum Shape {
        /** {@code execute}: not acquired throws. */
        BLOCKING,
        /** {@code tryExecute}: not acquired answers "not acquired". */
        TRY,
        /** {@code executeAsync}, nested calls made in the action's synchronous part, its stage completed elsewhere. */
        ASYNC,
        /** {@code execute} inside a transaction that commits. */
        TX_COMMIT,
        /** {@code execute} inside a transaction that is rolled back. */
        TX_ROLLBACK
    }

    /** What one call came to. */
    public enum Outcome {
        /** Its code ran. */
        GRANTED,
        /** Not acquired within the wait: {@code LockAcquisitionException} naming the key, or "not acquired". */
        BUSY,
        /** A nested call found its outer call's lock lost: {@code LockAcquisitionException} naming the key. */
        LOST,
        /** A nested call the outer hold does not cover: {@link NestedLockException} naming the key. */
        NESTED,
        /** Options refused: {@code IllegalArgumentException} naming the option. */
        BAD_OPTION
    }

    /** A lease this short may run out while the case runs: exclusion is not promised past it. */
    static final Duration SHORT_LEASE = Duration.ofSeconds(2);

    /** The longest wait on a key the contender holds: a refused call waits it out, and runs stay short. */
    static final Duration LONGEST_CONTENDED_WAIT = Duration.ofMillis(20);

    static final Duration LARGEST = Duration.ofSeconds(Long.MAX_VALUE, 999_999_999);

    /**
     * The options of one call as drawn, before {@link LockOptions} checks them.
     *
     * @param type the lock type
     * @param fenced whether fenced
     * @param permits holders allowed at once
     * @param waitTime the wait, {@code null} for the template's default (0 in the suite)
     * @param leaseTime the lease, {@code null} for the template's default (the watchdog in the suite)
     * @param holdAtLeast the minimum hold, {@code null} for none
     */
    public record Opts(LockType type, boolean fenced, int permits, @Nullable Duration waitTime,
            @Nullable Duration leaseTime, @Nullable Duration holdAtLeast) {

        /** The defaults every shrink moves toward. */
        public static final Opts DEFAULT = new Opts(LockType.REENTRANT, false, 1, null, null, null);

        /** These options as the template gets them; throws what {@link LockOptions} throws. */
        public LockOptions options() {
            return new LockOptions(waitTime, leaseTime, fenced, type, holdAtLeast, null, permits);
        }

        boolean shortLease() {
            return leaseTime != null && !leaseTime.isZero() && leaseTime.compareTo(SHORT_LEASE) < 0;
        }

        /** A lease that may end before the backend's answer arrives: the provider then reports "not acquired". */
        boolean leaseShorterThanATrip() {
            return leaseTime != null && !leaseTime.isZero() && leaseTime.compareTo(Duration.ofMillis(50)) < 0;
        }

        boolean extreme() {
            return isExtreme(waitTime) || isExtreme(leaseTime) || isExtreme(holdAtLeast);
        }

        private static boolean isExtreme(Duration time) {
            return time != null && time.compareTo(Duration.ofDays(365)) > 0;
        }

        /** These options with another value. */
        public Opts withType(LockType type) {
            return new Opts(type, fenced, permits, waitTime, leaseTime, holdAtLeast);
        }

        /** These options with another value. */
        public Opts withFenced(boolean fenced) {
            return new Opts(type, fenced, permits, waitTime, leaseTime, holdAtLeast);
        }

        /** These options with another value. */
        public Opts withPermits(int permits) {
            return new Opts(type, fenced, permits, waitTime, leaseTime, holdAtLeast);
        }

        /** These options with another value. */
        public Opts withWait(Duration waitTime) {
            return new Opts(type, fenced, permits, waitTime, leaseTime, holdAtLeast);
        }

        /** These options with another value. */
        public Opts withLease(Duration leaseTime) {
            return new Opts(type, fenced, permits, waitTime, leaseTime, holdAtLeast);
        }

        /** These options with another value. */
        public Opts withHold(Duration holdAtLeast) {
            return new Opts(type, fenced, permits, waitTime, leaseTime, holdAtLeast);
        }

        /** The options as Java, for a regression test. */
        public String java() {
            return "new Opts(LockType." + type + ", " + fenced + ", " + permits + ", " + java(waitTime) + ", "
                    + java(leaseTime) + ", " + java(holdAtLeast) + ")";
        }

        private static String java(Duration time) {
            if (time == null) {
                return "null";
            }
            if (time.equals(LARGEST)) {
                return "LockCallModel.LARGEST";
            }
            if (time.getNano() % 1_000_000 != 0 || time.getSeconds() > Long.MAX_VALUE / 1000) {
                return "Duration.ofSeconds(" + time.getSeconds() + "L, " + time.getNano() + ")";
            }
            return "Duration.ofMillis(" + time.toMillis() + "L)";
        }
    }

    /**
     * One call.
     *
     * @param keys its keys (without prefix), one or two
     * @param shape how it is made
     * @param opts its options
     */
    public record Call(List<String> keys, Shape shape, Opts opts) {

        /** The call as Java, for a regression test. */
        public String java() {
            return "new Call(List.of(\"" + String.join("\", \"", keys) + "\"), Shape." + shape + ", " + opts.java() + ")";
        }
    }

    /**
     * One generated case.
     *
     * @param contender the call of the second instance that holds its keys while the nest runs, or {@code null}
     * @param nest this instance's calls, each nested in the one before
     */
    public record Case(@Nullable Call contender, List<Call> nest) {

        /** The case as Java, to paste into a regression test. */
        public String java() {
            StringBuilder text = new StringBuilder("new Case(").append(contender == null ? "null" : contender.java())
                    .append(", List.of(");
            for (int i = 0; i < nest.size(); i++) {
                text.append(i > 0 ? ",\n        " : "\n        ").append(nest.get(i).java());
            }
            return text.append("))").toString();
        }
    }

    /** What the backend under test declares. */
    record Backend(java.util.function.BiPredicate<LockType, Boolean> supports, boolean permits, boolean transactions) {
    }

    private final Random random;
    private final boolean extremes;
    private final boolean transactions;

    LockCallModel(long seed, boolean extremes, boolean transactions) {
        this.random = new Random(seed);
        this.extremes = extremes;
        this.transactions = transactions;
    }

    /** {@code distlock.model.seed}: a number, or {@code random}; a fixed seed by default. */
    static long seed() {
        String value = System.getProperty("distlock.model.seed", "24");
        return value.equals("random") ? new Random().nextLong() : Long.parseLong(value);
    }

    /** {@code distlock.model.tries}, or {@code fallback}. */
    static int tries(int fallback) {
        return Integer.getInteger("distlock.model.tries", fallback);
    }

    /** {@code distlock.model.extremes}: whether durations at the edge of {@code Duration} are drawn; on by default. */
    static boolean extremes() {
        return Boolean.parseBoolean(System.getProperty("distlock.model.extremes", "true"));
    }

    // ---------------------------------------------------------------- generation

    Case next() {
        Call contender = random.nextInt(10) < 6 ? call(Shape.BLOCKING, List.of(), Set.of()) : null;
        Set<String> contended = (contender != null) ? Set.copyOf(contender.keys()) : Set.of();
        int depth = 1 + random.nextInt(3);
        List<Call> nest = new ArrayList<>();
        List<String> used = new ArrayList<>();
        for (int level = 0; level < depth; level++) {
            Shape shape = (level == 0) ? outerShape() : (random.nextInt(4) == 0 ? Shape.TRY : Shape.BLOCKING);
            Call call = call(shape, used, contended);
            used.addAll(call.keys());
            nest.add(call);
        }
        return new Case(contender, nest);
    }

    private Shape outerShape() {
        int draw = random.nextInt(transactions ? 10 : 7);
        return switch (draw) {
            case 0, 1, 2 -> Shape.BLOCKING;
            case 3, 4 -> Shape.TRY;
            case 5, 6 -> Shape.ASYNC;
            case 7, 8 -> Shape.TX_COMMIT;
            default -> Shape.TX_ROLLBACK;
        };
    }

    private Call call(Shape shape, List<String> outerKeys, Set<String> contended) {
        List<String> keys;
        if (!outerKeys.isEmpty() && random.nextInt(10) < 6) {
            // mostly a key an outer call holds: that is where re-entry is decided
            String reused = outerKeys.get(random.nextInt(outerKeys.size()));
            keys = random.nextInt(4) == 0 ? new ArrayList<>(new TreeSet<>(List.of(reused, other(reused))))
                    : List.of(reused);
        }
        else {
            keys = switch (random.nextInt(5)) {
                case 0 -> List.of("a", "b");
                case 1, 2 -> List.of("a");
                default -> List.of("b");
            };
        }
        LockType type = LockType.values()[random.nextInt(LockType.values().length)];
        boolean fenced = random.nextInt(4) == 0;
        int permits = random.nextInt(5) == 0 ? 2 + random.nextInt(2) : 1;
        Duration wait = pick(new Duration[] {null, null, Duration.ZERO, Duration.ofMillis(1), Duration.ofMillis(3),
                LONGEST_CONTENDED_WAIT, Duration.ofNanos(999_999), Duration.ofNanos(1_000_001)},
                new Duration[] {Duration.ofMillis(Long.MAX_VALUE), LARGEST, Duration.ofNanos(Long.MAX_VALUE)});
        boolean onContended = keys.stream().anyMatch(contended::contains);
        if (onContended && wait != null && wait.compareTo(LONGEST_CONTENDED_WAIT) > 0) {
            wait = LONGEST_CONTENDED_WAIT;
        }
        Duration lease = pick(new Duration[] {null, null, null, Duration.ZERO, Duration.ofMillis(1), Duration.ofMillis(3),
                Duration.ofSeconds(30), Duration.ofNanos(999_999), Duration.ofNanos(1_000_001)},
                new Duration[] {Duration.ofMillis(Long.MAX_VALUE), LARGEST, Duration.ofNanos(Long.MAX_VALUE)});
        Duration hold = pick(new Duration[] {null, null, null, null, Duration.ZERO, Duration.ofMillis(1),
                Duration.ofMillis(3), Duration.ofMillis(20), Duration.ofNanos(999_999)}, new Duration[0]);
        return new Call(keys, shape, new Opts(type, fenced, permits, wait, lease, hold));
    }

    private static String other(String key) {
        return key.equals("a") ? "b" : "a";
    }

    private Duration pick(Duration[] usual, Duration[] extreme) {
        if (extremes && extreme.length > 0 && random.nextInt(12) == 0) {
            return extreme[random.nextInt(extreme.length)];
        }
        return usual[random.nextInt(usual.length)];
    }

    // ---------------------------------------------------------------- the model

    /** What this thread holds for one key at one level: the outermost call's hold. */
    record Hold(LockType type, int permits, boolean shortLease) {
    }

    /** What the contender came to and holds. */
    record Contender(Call call, boolean holds) {
    }

    /** The family of a type: REENTRANT and FAIR are one lock, READ and WRITE another. */
    static String family(LockType type) {
        return (type == LockType.READ || type == LockType.WRITE) ? "rw" : "lock";
    }

    /**
     * The outcomes allowed for a call of options {@code opts} on {@code keys} (sorted), made while this thread holds
     * {@code held} (key to hold, from the outer levels) and the contender holds what it holds.
     */
    static Set<Outcome> allowed(Backend backend, Call call, java.util.Map<String, Hold> held, Contender contender) {
        Opts opts = call.opts();
        Set<Outcome> allowed = EnumSet.noneOf(Outcome.class);
        if (opts.extreme()) {
            // durations at the edge: they either work as "for ever" or are refused naming the option
            allowed.add(Outcome.BAD_OPTION);
        }
        try {
            opts.options();
        }
        catch (IllegalArgumentException invalid) {
            return EnumSet.of(Outcome.BAD_OPTION);
        }
        if (!backend.supports().test(opts.type(), opts.fenced()) || (opts.permits() > 1 && !backend.permits())) {
            return EnumSet.of(Outcome.BAD_OPTION);
        }
        boolean async = call.shape() == Shape.ASYNC;
        List<String> missing = new ArrayList<>();
        for (String key : new TreeSet<>(call.keys())) {
            Hold hold = held.get(key);
            if (hold == null) {
                missing.add(key);
                continue;
            }
            if (async) {
                // executeAsync never re-enters, and taking the key for a new owner would wait for this very thread
                allowed.add(Outcome.NESTED);
                return allowed;
            }
            if (hold.permits() != opts.permits() || !NestedLockException.reenters(hold.type(), opts.type())) {
                allowed.add(Outcome.NESTED);
                return allowed;
            }
            if (hold.shortLease()) {
                allowed.add(Outcome.LOST);
            }
        }
        boolean mayBeBusy = false;
        boolean mustBeBusy = false;
        for (String key : missing) {
            if (contender == null || !contender.holds() || !contender.call().keys().contains(key)) {
                continue;
            }
            Opts theirs = contender.call().opts();
            boolean comparable = family(theirs.type()).equals(family(opts.type())) && theirs.permits() == opts.permits();
            if (!comparable) {
                // two families or a lock and a semaphore of one key: apart on some backends, one on others
                mayBeBusy = true;
            }
            else if (conflicts(theirs.type(), theirs.permits(), opts)) {
                mayBeBusy = true;
                mustBeBusy |= !theirs.shortLease();
            }
        }
        if (mayBeBusy || opts.leaseShorterThanATrip()) {
            allowed.add(Outcome.BUSY);
        }
        if (!mustBeBusy) {
            allowed.add(Outcome.GRANTED);
        }
        return allowed;
    }

    /** Whether a holder of {@code type} with {@code permits} keeps out a new owner asking {@code opts}. */
    private static boolean conflicts(LockType type, int permits, Opts opts) {
        if (permits > 1) {
            // one permit taken of at least two: another is free
            return false;
        }
        return type.exclusive() || opts.type().exclusive();
    }

    // ---------------------------------------------------------------- shrinking

    /**
     * The smallest case that still fails: the contender and levels left out, keys and options reset toward their
     * defaults, one at a time, as long as {@code fails} says so. At most {@code budget} runs.
     */
    static Case shrink(Case failing, Predicate<Case> fails, int budget) {
        Case current = failing;
        int[] runs = {0};
        boolean changed = true;
        while (changed && runs[0] < budget) {
            changed = false;
            for (Case candidate : smaller(current)) {
                if (runs[0]++ >= budget) {
                    break;
                }
                if (fails.test(candidate)) {
                    current = candidate;
                    changed = true;
                    break;
                }
            }
        }
        return current;
    }

    private static List<Case> smaller(Case c) {
        List<Case> candidates = new ArrayList<>();
        if (c.contender() != null) {
            candidates.add(new Case(null, c.nest()));
        }
        for (int i = c.nest().size() - 1; i >= 0 && c.nest().size() > 1; i--) {
            List<Call> nest = new ArrayList<>(c.nest());
            nest.remove(i);
            if (i == 0 && nest.get(0).shape() != Shape.BLOCKING && nest.get(0).shape() != Shape.TRY) {
                continue;
            }
            candidates.add(new Case(c.contender(), nest));
        }
        for (int i = -1; i < c.nest().size(); i++) {
            Call call = (i < 0) ? c.contender() : c.nest().get(i);
            if (call == null) {
                continue;
            }
            for (Call simpler : simpler(call)) {
                if (i < 0) {
                    candidates.add(new Case(simpler, c.nest()));
                }
                else {
                    List<Call> nest = new ArrayList<>(c.nest());
                    nest.set(i, simpler);
                    candidates.add(new Case(c.contender(), nest));
                }
            }
        }
        return candidates;
    }

    private static List<Call> simpler(Call call) {
        List<Call> simpler = new ArrayList<>();
        Opts o = call.opts();
        Opts d = Opts.DEFAULT;
        if (call.shape() != Shape.BLOCKING) {
            simpler.add(new Call(call.keys(), Shape.BLOCKING, o));
        }
        if (call.keys().size() > 1) {
            simpler.add(new Call(List.of(call.keys().get(0)), call.shape(), o));
            simpler.add(new Call(List.of(call.keys().get(1)), call.shape(), o));
        }
        List<Opts> opts = new ArrayList<>();
        if (o.holdAtLeast() != null) {
            opts.add(o.withHold(null));
        }
        if (o.leaseTime() != null) {
            opts.add(o.withLease(null));
        }
        if (o.waitTime() != null) {
            opts.add(o.withWait(null));
        }
        if (o.fenced()) {
            opts.add(o.withFenced(false));
        }
        if (o.permits() != d.permits()) {
            opts.add(o.withPermits(1));
        }
        if (o.type() != d.type()) {
            opts.add(o.withType(d.type()));
        }
        for (Opts option : opts) {
            simpler.add(new Call(call.keys(), call.shape(), option));
        }
        return simpler;
    }
}

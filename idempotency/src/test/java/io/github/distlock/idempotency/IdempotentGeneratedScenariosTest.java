package io.github.distlock.idempotency;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import io.github.distlock.idempotency.PaymentsApplication.Checkout.After;
import io.github.distlock.idempotency.PaymentsApplication.DeclinedException;
import io.github.distlock.idempotency.PaymentsApplication.PaymentRequest;
import io.github.distlock.idempotency.PaymentsApplication.Receipt;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Generated sequences of payment callbacks against a reference model of {@link Idempotent}: two application instances
 * on one redis-server and one H2 database, callers with and without their own transaction (committing, throwing after
 * the call, marked rollback-only, failing at commit, a method with its own {@code REQUIRES_NEW}, a {@code SUPPORTS}
 * scope without a transaction, a retry inside the transaction, another callback failing after the commit), failures
 * at every
 * step (the body, a final "declined" failure, the mark write after the commit), duplicates from the other instance
 * before the commit, the same request twice in one transaction, and replays whose details map is reordered, whose
 * amount has another scale, or whose amount or note (left out of the request's {@code toString()}) differ.
 *
 * <p>The model says, for each call, whether the body runs, which stored result is returned, or which exception is
 * thrown (its type and message); the probes are outside the library: a count of body runs per request, the rows of
 * {@code payment}, the mark and lock keys in Redis. A failing sequence is shrunk (steps removed, then each step made
 * plainer) to a minimal one, printed with its seed, to be kept as a named test below.
 *
 * <p>CI runs {@value #DEFAULT_TRIES} sequences from seed {@value #DEFAULT_SEED}. A long random run:
 * {@code ./mvnw -pl idempotency -am verify -Dtest=IdempotentGeneratedScenariosTest
 * -Dsurefire.failIfNoSpecifiedTests=false -Ddistlock.idempotency.generated.seed=random
 * -Ddistlock.idempotency.generated.tries=2000}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class IdempotentGeneratedScenariosTest {

    static final long DEFAULT_SEED = 24L;
    static final int DEFAULT_TRIES = 40;
    private static final int MAX_STEPS = 8;
    private static final int REQUESTS = 3;

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    /** Two instances with their marks in Redis, and two with their marks in the payments database. */
    private Deployment redisMarks;
    private Deployment databaseMarks;

    /**
     * Application instances sharing one Redis and one database, keeping their marks in Redis or, when
     * {@code marksInDatabase}, in a table of the database written inside the caller's transaction
     * ({@link IdempotencyStore#joinsTransactions()}).
     */
    record Deployment(List<PaymentsApplication> instances, boolean marksInDatabase) {
    }
    private ExecutorService other;

    /** What the caller around the idempotent call does. */
    enum Caller {
        /** No transaction. */
        NONE,
        /** Its transaction commits. */
        COMMIT,
        /** It throws after the call returned: its transaction rolls back. */
        THROW_AFTER,
        /** It marks its transaction rollback-only and returns. */
        ROLLBACK_ONLY,
        /** Its commit fails (a beforeCommit callback throws): the transaction rolls back. */
        COMMIT_FAILS,
        /** The method has its own REQUIRES_NEW transaction; the caller's throws after it returned. */
        OWN_TRANSACTION_THEN_THROW,
        /** A SUPPORTS scope without a transaction (writes commit as they happen) that throws after the call. */
        SCOPE_WITHOUT_TRANSACTION_THEN_THROW,
        /** A transaction that retries a call failing with IllegalStateException once, then commits. */
        RETRY_IN_TRANSACTION,
        /** A transaction beside another library's afterCommit callback that fails (after the commit). */
        BESIDE_FAILING_AFTER_COMMIT;

        boolean hook() {
            return this == COMMIT || this == THROW_AFTER || this == ROLLBACK_ONLY || this == COMMIT_FAILS;
        }
    }

    enum Fault {
        NONE, BODY_FAILS, BODY_DECLINED, MARK_WRITE_FAILS
    }

    /**
     * A request's content (amount in cents, note) and how it is written (the amount's scale, the details' order), which
     * must not matter.
     */
    record Payload(long cents, String note, int extraScale, boolean detailsReversed) {

        boolean sameContent(Payload other) {
            return cents == other.cents && note.equals(other.note);
        }

        @Override
        public String toString() {
            return "new Payload(" + cents + ", \"" + note + "\", " + extraScale + ", " + detailsReversed + ")";
        }
    }

    /** One callback delivered to an instance. */
    record Step(int instance, int request, Payload payload, Caller caller, Fault fault, boolean duplicateBeforeCommit,
            boolean twiceInTransaction) {

        @Override
        public String toString() {
            return "new Step(" + instance + ", " + request + ", " + payload + ", Caller." + caller + ", Fault." + fault
                    + ", " + duplicateBeforeCommit + ", " + twiceInTransaction + ")";
        }
    }

    @BeforeAll
    void start() {
        String jdbcUrl = "jdbc:h2:mem:generated-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
        redisMarks = new Deployment(List.of(new PaymentsApplication(redis.uri(), jdbcUrl),
                new PaymentsApplication(redis.uri(), jdbcUrl)), false);
        String tablesUrl = "jdbc:h2:mem:generated-tables-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
        databaseMarks = new Deployment(List.of(new PaymentsApplication(redis.uri(), tablesUrl, "payments.store=jdbc"),
                new PaymentsApplication(redis.uri(), tablesUrl, "payments.store=jdbc")), true);
        other = Executors.newSingleThreadExecutor();
    }

    @AfterAll
    void stop() {
        if (other != null) {
            other.shutdownNow();
        }
        for (Deployment deployment : new Deployment[] {redisMarks, databaseMarks}) {
            if (deployment != null) {
                deployment.instances().forEach(PaymentsApplication::close);
            }
        }
    }

    @Test
    void generatedCallbackSequencesBehaveAsTheModelSays() {
        generated(redisMarks);
    }

    @Test
    void generatedSequencesWithMarksInTheTransactionsDatabaseBehaveAsTheModelSays() {
        generated(databaseMarks);
    }

    private void generated(Deployment deployment) {
        String seedProperty = System.getProperty("distlock.idempotency.generated.seed");
        long seed = (seedProperty == null) ? DEFAULT_SEED
                : "random".equals(seedProperty) ? new Random().nextLong() : Long.parseLong(seedProperty);
        int tries = Integer.getInteger("distlock.idempotency.generated.tries", DEFAULT_TRIES);
        Random random = new Random(seed);
        // printed so that a failure of a random run can be replayed
        System.out.println("IdempotentGeneratedScenariosTest: seed " + seed + ", " + tries + " sequences, marks in "
                + (deployment.marksInDatabase() ? "the database" : "Redis"));
        Map<String, Integer> coverage = new java.util.TreeMap<>();
        for (int i = 0; i < tries; i++) {
            List<Step> steps = generate(random);
            steps.forEach(step -> {
                coverage.merge("caller " + step.caller(), 1, Integer::sum);
                coverage.merge("fault " + step.fault(), 1, Integer::sum);
            });
            String failure = failure(deployment, steps);
            if (failure != null) {
                List<Step> shrunk = shrink(deployment, steps);
                throw new AssertionError("Sequence " + i + " of seed " + seed + " (-Ddistlock.idempotency.generated.seed="
                        + seed + ") breaks the model: " + failure + "\n  sequence: " + steps + "\n  shrunk to: "
                        + shrunk + "\n  which fails with: " + failure(deployment, shrunk));
            }
        }
        System.out.println("IdempotentGeneratedScenariosTest: steps per caller and fault " + coverage);
        for (Caller caller : Caller.values()) {
            assertThat(coverage).as("sequences cover every caller").containsKey("caller " + caller);
        }
    }

    // ------------------------------------------------------------ regressions found by the generator, shrunk

    /** Shrunk from seed 24: a caller's rollback after the call must leave the redelivery to run and pay. */
    @Test
    void aRedeliveryAfterTheCallerRolledBackPaysOnce() {
        assertThat(failure(redisMarks, List.of(
                new Step(0, 0, base(), Caller.THROW_AFTER, Fault.NONE, false, false),
                new Step(0, 0, base(), Caller.NONE, Fault.NONE, false, false)))).isNull();
    }

    /** Shrunk: a duplicate before the commit must be refused as in progress, not answered from a mark. */
    @Test
    void aDuplicateBeforeTheCommitIsRefusedAsInProgress() {
        assertThat(failure(redisMarks, List.of(
                new Step(0, 0, base(), Caller.COMMIT, Fault.NONE, true, false)))).isNull();
    }

    /** Shrunk: the same request again in the transaction that ran it gets that run's result. */
    @Test
    void theSameRequestAgainInItsTransactionGetsItsResult() {
        assertThat(failure(redisMarks, List.of(
                new Step(0, 0, base(), Caller.COMMIT, Fault.NONE, false, true)))).isNull();
    }

    /** Shrunk: a request whose amount its text leaves out is refused when reused with another amount. */
    @Test
    void anotherAmountUnderTheSameKeyIsRefused() {
        assertThat(failure(redisMarks, List.of(
                new Step(0, 0, base(), Caller.NONE, Fault.NONE, false, false),
                new Step(1, 0, new Payload(9900, "n", 0, false), Caller.NONE, Fault.NONE, false, false)))).isNull();
    }

    /** A SUPPORTS scope has no transaction to wait for: the body's committed work is marked when it returns. */
    @Test
    void aScopeWithoutATransactionKeepsTheMarkOfCommittedWork() {
        assertThat(failure(redisMarks, List.of(
                new Step(0, 0, base(), Caller.SCOPE_WITHOUT_TRANSACTION_THEN_THROW, Fault.NONE, false, false),
                new Step(1, 0, base(), Caller.NONE, Fault.NONE, false, false)))).isNull();
    }

    /** A retry after a failed call in the same transaction runs, not refused as still running. */
    @Test
    void aRetryInTheTransactionAfterAFailureRuns() {
        assertThat(failure(redisMarks, List.of(
                new Step(0, 0, base(), Caller.RETRY_IN_TRANSACTION, Fault.BODY_FAILS, false, false)))).isNull();
    }

    /** Another callback failing after the commit does not keep the committed call's mark from being stored. */
    @Test
    void theMarkOfACommittedCallSurvivesAnotherFailingAfterCommit() {
        assertThat(failure(redisMarks, List.of(
                new Step(0, 0, base(), Caller.BESIDE_FAILING_AFTER_COMMIT, Fault.NONE, false, false),
                new Step(1, 0, base(), Caller.NONE, Fault.NONE, false, false)))).isNull();
    }

    /**
     * Shrunk, with marks in the database: a method committing in its own transaction, called inside another, would
     * have its mark rolled back with the caller's while its work stayed; refused before it runs.
     */
    @Test
    void workInItsOwnTransactionIsRefusedWhenItsMarkWouldRollBackWithTheCallers() {
        assertThat(failure(databaseMarks, List.of(
                new Step(0, 0, base(), Caller.OWN_TRANSACTION_THEN_THROW, Fault.NONE, false, false),
                new Step(1, 0, base(), Caller.NONE, Fault.NONE, false, false)))).isNull();
    }

    /**
     * Found by a random run (seed 4222045749194013578), with marks in the database: when writing the mark inside the
     * transaction failed, the same request again in that transaction ran the body a second time. (That write failing
     * now fails the call and the transaction: a retry in it gets the result it holds, and its commit fails.)
     */
    @Test
    void theSameRequestAgainInItsTransactionGetsItsResultWhenTheMarkWriteFailed() {
        assertThat(failure(databaseMarks, List.of(
                new Step(0, 0, base(), Caller.COMMIT, Fault.MARK_WRITE_FAILS, false, true)))).isNull();
        assertThat(failure(databaseMarks, List.of(
                new Step(0, 0, base(), Caller.RETRY_IN_TRANSACTION, Fault.MARK_WRITE_FAILS, false, false),
                new Step(0, 1, base(), Caller.NONE, Fault.NONE, false, false)))).isNull();
        assertThat(failure(redisMarks, List.of(
                new Step(0, 0, base(), Caller.COMMIT, Fault.MARK_WRITE_FAILS, false, true)))).isNull();
    }

    // ------------------------------------------------------------ generation and shrinking

    private static Payload base() {
        return new Payload(1250, "n", 0, false);
    }

    private static List<Step> generate(Random random) {
        int count = 1 + random.nextInt(MAX_STEPS);
        List<Step> steps = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            Caller caller = Caller.values()[random.nextInt(Caller.values().length)];
            Fault fault = (random.nextInt(3) == 0) ? Fault.values()[1 + random.nextInt(Fault.values().length - 1)]
                    : Fault.NONE;
            long cents = (random.nextInt(5) == 0) ? 9900 : 1250;
            String note = (random.nextInt(6) == 0) ? "m" : "n";
            Payload payload = new Payload(cents, note, random.nextInt(3), random.nextBoolean());
            boolean duplicate = caller.hook() && random.nextInt(3) == 0;
            boolean twice = caller.hook() && !duplicate && random.nextInt(4) == 0;
            steps.add(new Step(random.nextInt(2), random.nextInt(REQUESTS), payload, caller, fault, duplicate, twice));
        }
        return steps;
    }

    /** A smallest sequence found that still fails: steps removed, then each step made plainer. */
    private List<Step> shrink(Deployment deployment, List<Step> failing) {
        List<Step> current = new ArrayList<>(failing);
        boolean changed = true;
        while (changed) {
            changed = false;
            for (int i = current.size() - 1; i >= 0 && current.size() > 1; i--) {
                List<Step> candidate = new ArrayList<>(current);
                candidate.remove(i);
                if (failure(deployment, candidate) != null) {
                    current = candidate;
                    changed = true;
                }
            }
            for (int i = 0; i < current.size(); i++) {
                for (Step simpler : simpler(current.get(i))) {
                    List<Step> candidate = new ArrayList<>(current);
                    candidate.set(i, simpler);
                    if (failure(deployment, candidate) != null) {
                        current = candidate;
                        changed = true;
                        break;
                    }
                }
            }
        }
        return current;
    }

    private static List<Step> simpler(Step step) {
        List<Step> simpler = new ArrayList<>();
        if (step.fault() != Fault.NONE) {
            simpler.add(new Step(step.instance(), step.request(), step.payload(), step.caller(), Fault.NONE,
                    step.duplicateBeforeCommit(), step.twiceInTransaction()));
        }
        if (step.duplicateBeforeCommit() || step.twiceInTransaction()) {
            simpler.add(new Step(step.instance(), step.request(), step.payload(), step.caller(), step.fault(), false,
                    false));
        }
        if (step.caller() != Caller.NONE && !step.duplicateBeforeCommit() && !step.twiceInTransaction()) {
            simpler.add(new Step(step.instance(), step.request(), step.payload(), Caller.NONE, step.fault(), false,
                    false));
        }
        if (step.caller() != Caller.COMMIT && step.caller().hook()) {
            simpler.add(new Step(step.instance(), step.request(), step.payload(), Caller.COMMIT, step.fault(),
                    step.duplicateBeforeCommit(), step.twiceInTransaction()));
        }
        if (step.instance() != 0) {
            simpler.add(new Step(0, step.request(), step.payload(), step.caller(), step.fault(),
                    step.duplicateBeforeCommit(), step.twiceInTransaction()));
        }
        if (step.request() != 0) {
            simpler.add(new Step(step.instance(), 0, step.payload(), step.caller(), step.fault(),
                    step.duplicateBeforeCommit(), step.twiceInTransaction()));
        }
        if (!step.payload().equals(base()) && step.payload().sameContent(base())) {
            simpler.add(new Step(step.instance(), step.request(), base(), step.caller(), step.fault(),
                    step.duplicateBeforeCommit(), step.twiceInTransaction()));
        }
        return simpler;
    }

    // ------------------------------------------------------------ the model and the run

    /** What one call gives its caller: a receipt, or an exception of a type with a message. */
    record Outcome(Receipt receipt, Class<?> failure, String message) {

        static Outcome of(Receipt receipt) {
            return new Outcome(receipt, null, null);
        }

        static Outcome threw(Throwable failure) {
            return new Outcome(null, failure.getClass(), failure.getMessage());
        }

        static Outcome threw(Class<?> type, String message) {
            return new Outcome(null, type, message);
        }
    }

    /** The model's memory of a request: its stored outcome (content it was stored for), body runs and rows. */
    private static final class Request {

        Payload storedFor;
        Receipt storedReceipt;
        boolean storedDeclined;
        int runs;
        int rows;
    }

    /** Whether the work of a call that returned is committed, by the caller's transaction or on its own. */
    private static boolean committed(Caller caller) {
        return switch (caller) {
            case NONE, COMMIT, OWN_TRANSACTION_THEN_THROW, SCOPE_WITHOUT_TRANSACTION_THEN_THROW, RETRY_IN_TRANSACTION,
                    BESIDE_FAILING_AFTER_COMMIT -> true;
            case THROW_AFTER, ROLLBACK_ONLY, COMMIT_FAILS -> false;
        };
    }

    /** Whether the call joins a transaction of the caller (its mark, in the database, is written in it). */
    private static boolean inTransaction(Caller caller) {
        return switch (caller) {
            case COMMIT, THROW_AFTER, ROLLBACK_ONLY, COMMIT_FAILS, RETRY_IN_TRANSACTION, BESIDE_FAILING_AFTER_COMMIT ->
                    true;
            case NONE, OWN_TRANSACTION_THEN_THROW, SCOPE_WITHOUT_TRANSACTION_THEN_THROW -> false;
        };
    }

    /** Runs {@code steps} with fresh request ids; {@code null} when every call and probe matched the model. */
    private String failure(Deployment deployment, List<Step> steps) {
        String prefix = "g-" + UUID.randomUUID() + "-";
        Map<Integer, Request> model = new HashMap<>();
        for (int s = 0; s < steps.size(); s++) {
            Step step = steps.get(s);
            String id = prefix + step.request();
            Request state = model.computeIfAbsent(step.request(), r -> new Request());
            PaymentsApplication app = deployment.instances().get(step.instance());
            PaymentsApplication duplicateApp = deployment.instances().get(1 - step.instance());
            String markKey = "lock:idempotent-mark:pay:" + id;
            PaymentRequest request = request(id, step.payload());

            // the model's prediction, from the state before the step
            Outcome expectedCall;
            Outcome expectedCaller;
            Outcome expectedInside = null;
            if (deployment.marksInDatabase() && step.caller() == Caller.OWN_TRANSACTION_THEN_THROW) {
                // its work would commit on its own while its mark rolled back with the caller's transaction: refused
                expectedCall = Outcome.threw(IllegalStateException.class, "Idempotent call 'pay:" + id + "' commits "
                        + "its work in a transaction of its own (REQUIRES_NEW, NOT_SUPPORTED), but it is called inside "
                        + "another transaction and its mark store joins transactions (IdempotencyStore."
                        + "joinsTransactions()): the mark would roll back with the caller's transaction while the work "
                        + "stays committed, and a duplicate would run it again. Call it outside the transaction, or "
                        + "let its work join the caller's");
                expectedCaller = expectedCall;
            }
            else if (state.storedFor != null) {
                if (!state.storedFor.sameContent(step.payload())) {
                    expectedCall = Outcome.threw(IdempotencyKeyReusedException.class, "Idempotency key 'pay:" + id
                            + "' was used before for a different request (its fingerprint differs); use a new key "
                            + "for a new request");
                }
                else if (state.storedDeclined) {
                    expectedCall = Outcome.threw(DuplicateRequestException.class, "A call with idempotency key 'pay:"
                            + id + "' was processed and failed with " + DeclinedException.class.getName()
                            + ": declined " + id);
                }
                else {
                    expectedCall = Outcome.of(state.storedReceipt);
                }
                // a duplicate or a second call inside the transaction reads the same mark
                expectedInside = expectedCall;
                expectedCaller = (expectedCall.failure() != null) ? expectedCall : afterCall(step, id, expectedCall);
            }
            else {
                state.runs++;
                switch (step.fault()) {
                    case BODY_FAILS -> {
                        expectedCall = Outcome.threw(IllegalStateException.class, "body of " + id + " failed");
                        expectedCaller = expectedCall;
                        if (step.caller() == Caller.RETRY_IN_TRANSACTION) {
                            // the retry in the same transaction runs again, succeeds, and commits
                            state.runs++;
                            Receipt receipt = new Receipt(id, step.payload().cents(), state.runs);
                            expectedCaller = Outcome.of(receipt);
                            state.rows++;
                            state.storedFor = step.payload();
                            state.storedReceipt = receipt;
                        }
                    }
                    case BODY_DECLINED -> {
                        expectedCall = Outcome.threw(DeclinedException.class, "declined " + id);
                        expectedCaller = expectedCall;
                        // a final failure: stored at once, whatever the caller's transaction does; a mark in the
                        // transaction's database is kept only where no transaction rolls it back
                        if (!deployment.marksInDatabase() || step.caller() == Caller.NONE
                                || step.caller() == Caller.SCOPE_WITHOUT_TRANSACTION_THEN_THROW) {
                            state.storedFor = step.payload();
                            state.storedDeclined = true;
                        }
                    }
                    case MARK_WRITE_FAILS -> {
                        if (deployment.marksInDatabase() && inTransaction(step.caller())) {
                            // the work is in the caller's transaction and its mark could not be written there: the
                            // call fails, and the transaction with it (its commit too, when a retry caught the call's
                            // failure and got the result the transaction holds): no payment, no mark
                            expectedCall = Outcome.threw(IllegalStateException.class, "Idempotent call 'pay:" + id
                                    + "' did its work in the caller's transaction, but its mark could not be written in "
                                    + "that transaction (java.lang.IllegalStateException: Redis unreachable writing "
                                    + markKey + "): the transaction must roll back the work with it");
                            expectedCaller = expectedCall;
                        }
                        else {
                            Receipt receipt = new Receipt(id, step.payload().cents(), state.runs);
                            expectedCall = Outcome.of(receipt);
                            expectedCaller = afterCall(step, id, expectedCall);
                            if (committed(step.caller())) {
                                state.rows++;
                            }
                            if (step.duplicateBeforeCommit()) {
                                expectedInside = Outcome.threw(RequestInProgressException.class, "A call with "
                                        + "idempotency key 'pay:" + id + "' is still running; this duplicate was "
                                        + "refused. Retry later for its result.");
                            }
                            else if (step.twiceInTransaction()) {
                                expectedInside = expectedCall;
                            }
                        }
                    }
                    default -> {
                        Receipt receipt = new Receipt(id, step.payload().cents(), state.runs);
                        expectedCall = Outcome.of(receipt);
                        expectedCaller = afterCall(step, id, expectedCall);
                        if (committed(step.caller())) {
                            state.rows++;
                            state.storedFor = step.payload();
                            state.storedReceipt = receipt;
                        }
                        if (step.duplicateBeforeCommit()) {
                            expectedInside = Outcome.threw(RequestInProgressException.class, "A call with "
                                    + "idempotency key 'pay:" + id + "' is still running; this duplicate was refused. "
                                    + "Retry later for its result.");
                        }
                        else if (step.twiceInTransaction()) {
                            expectedInside = expectedCall;
                        }
                    }
                }
            }
            // the hook inside the caller's transaction runs only once the call returned
            if (!step.caller().hook() || !(step.duplicateBeforeCommit() || step.twiceInTransaction())
                    || expectedCall.failure() != null) {
                expectedInside = null;
            }

            // the run
            switch (step.fault()) {
                case BODY_FAILS -> app.payments().failNext(id, new IllegalStateException("body of " + id
                        + " failed"));
                case BODY_DECLINED -> app.payments().failNext(id, new DeclinedException("declined " + id));
                case MARK_WRITE_FAILS -> app.store().failWrites.add(markKey);
                case NONE -> {
                }
            }
            AtomicReference<Outcome> inside = new AtomicReference<>();
            Outcome actual;
            try {
                actual = Outcome.of(call(step, app, duplicateApp, request, inside));
            }
            catch (RuntimeException ex) {
                actual = Outcome.threw(ex);
            }
            finally {
                app.payments().clearFailure(id);
                app.store().failWrites.remove(markKey);
            }

            String where = "step " + s + " " + step + ": ";
            if (!expectedCaller.equals(actual)) {
                return where + "the caller got " + actual + ", the model says " + expectedCaller;
            }
            if (!Objects.equals(expectedInside, inside.get())) {
                return where + "the call inside the open transaction got " + inside.get() + ", the model says "
                        + expectedInside;
            }
            // the probes, for every request of the sequence
            for (Map.Entry<Integer, Request> entry : model.entrySet()) {
                String probeId = prefix + entry.getKey();
                Request expected = entry.getValue();
                if (PaymentsApplication.runs(probeId) != expected.runs) {
                    return where + "request " + entry.getKey() + " ran its body " + PaymentsApplication.runs(probeId)
                            + " times, the model says " + expected.runs;
                }
                if (app.rows(probeId) != expected.rows) {
                    return where + "request " + entry.getKey() + " has " + app.rows(probeId) + " payment rows, the "
                            + "model says " + expected.rows;
                }
                boolean marked = deployment.marksInDatabase()
                        ? app.jdbc().queryForObject("SELECT COUNT(*) FROM idempotency_mark WHERE mark_key = ?",
                                Integer.class, "lock:idempotent-mark:pay:" + probeId) == 1
                        : app.exists("lock:idempotent-mark:pay:" + probeId);
                if (marked != (expected.storedFor != null)) {
                    return where + "request " + entry.getKey() + (marked ? " has" : " has no") + " mark in "
                            + (deployment.marksInDatabase() ? "the database" : "Redis") + ", the model says "
                            + (expected.storedFor != null);
                }
                String lockKey = "lock:idempotent:pay:" + probeId;
                try {
                    if (app.exists(lockKey)) {
                        // a release after the transaction may still be on its way
                        await().atMost(Duration.ofSeconds(5)).until(() -> !app.exists(lockKey));
                    }
                }
                catch (org.awaitility.core.ConditionTimeoutException ex) {
                    return where + "request " + entry.getKey() + "'s lock is still held after the step";
                }
            }
        }
        return null;
    }

    /** What the caller gets when the idempotent call gave {@code call}. */
    private static Outcome afterCall(Step step, String id, Outcome call) {
        return switch (step.caller()) {
            case NONE, COMMIT, ROLLBACK_ONLY, RETRY_IN_TRANSACTION -> call;
            case THROW_AFTER, OWN_TRANSACTION_THEN_THROW, SCOPE_WITHOUT_TRANSACTION_THEN_THROW -> Outcome.threw(
                    IllegalStateException.class, "checkout of " + id + " failed after paying");
            case BESIDE_FAILING_AFTER_COMMIT -> Outcome.threw(IllegalStateException.class, "afterCommit of another "
                    + "library failed for " + id);
            case COMMIT_FAILS -> Outcome.threw(IllegalStateException.class, "commit of " + id + " failed");
        };
    }

    private Receipt call(Step step, PaymentsApplication app, PaymentsApplication duplicateApp,
            PaymentRequest request, AtomicReference<Outcome> inside) {
        Runnable hook = () -> {
            if (step.duplicateBeforeCommit()) {
                Future<Receipt> duplicate = other.submit(() -> duplicateApp.payments().settleRefusing(request));
                inside.set(outcome(duplicate));
            }
            else if (step.twiceInTransaction()) {
                try {
                    inside.set(Outcome.of(app.payments().settle(request)));
                }
                catch (RuntimeException ex) {
                    inside.set(Outcome.threw(ex));
                }
            }
        };
        return switch (step.caller()) {
            case NONE -> app.payments().settle(request);
            case COMMIT -> app.checkout().pay(app.payments(), request, After.COMMIT, hook);
            case THROW_AFTER -> app.checkout().pay(app.payments(), request, After.THROW, hook);
            case ROLLBACK_ONLY -> app.checkout().pay(app.payments(), request, After.SET_ROLLBACK_ONLY, hook);
            case COMMIT_FAILS -> app.checkout().pay(app.payments(), request, After.FAIL_COMMIT, hook);
            case OWN_TRANSACTION_THEN_THROW -> app.checkout().payInOwnTransactionThenThrow(app.payments(), request);
            case SCOPE_WITHOUT_TRANSACTION_THEN_THROW -> app.checkout().payWithoutTransactionThenThrow(app.payments(),
                    request);
            case RETRY_IN_TRANSACTION -> app.checkout().payRetrying(app.payments(), request);
            case BESIDE_FAILING_AFTER_COMMIT -> app.checkout().payBesideAFailingAfterCommit(app.payments(), request);
        };
    }

    private static Outcome outcome(Future<Receipt> call) {
        try {
            return Outcome.of(call.get(30, TimeUnit.SECONDS));
        }
        catch (java.util.concurrent.ExecutionException ex) {
            return Outcome.threw(ex.getCause());
        }
        catch (Exception ex) {
            throw new IllegalStateException("the duplicate did not answer", ex);
        }
    }

    /** The request as delivered: the same content may come with another scale and another order of its details. */
    private static PaymentRequest request(String id, Payload payload) {
        Map<String, String> details = new LinkedHashMap<>();
        if (payload.detailsReversed()) {
            details.put("card", "4242");
            details.put("channel", "web");
        }
        else {
            details.put("channel", "web");
            details.put("card", "4242");
        }
        BigDecimal amount = BigDecimal.valueOf(payload.cents(), 2).setScale(2 + payload.extraScale());
        return new PaymentRequest(id, amount, details, payload.note());
    }
}

package io.github.distlock.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockCallback;
import io.github.distlock.LockContext;
import io.github.distlock.LockOptions;
import io.github.distlock.LockType;
import io.github.distlock.NestedLockException;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.test.LockCallModel.Backend;
import io.github.distlock.test.LockCallModel.Call;
import io.github.distlock.test.LockCallModel.Case;
import io.github.distlock.test.LockCallModel.Contender;
import io.github.distlock.test.LockCallModel.Hold;
import io.github.distlock.test.LockCallModel.Outcome;
import io.github.distlock.test.LockCallModel.Shape;
import org.jspecify.annotations.Nullable;
import org.springframework.util.ClassUtils;

/**
 * Runs {@link Case}s on two instances (two templates, each on a provider of its own) and checks every outcome against
 * {@link LockCallModel#allowed} and the invariants against its own probe, not the library's bookkeeping: an overlap
 * counter per key and lock family (never two holders where one is exclusive, never more than {@code permits}), a
 * fenced register per key (a new acquisition's token above every earlier one), a new owner refused while a body runs,
 * and every key free for a third owner after the case, whatever its outcome.
 */
final class ModelRunner implements AutoCloseable {

    static final boolean TRANSACTIONS = ClassUtils.isPresent(
            "org.springframework.transaction.support.AbstractPlatformTransactionManager", ModelRunner.class.getClassLoader());

    private final DefaultLockTemplate mine;
    private final DefaultLockTemplate theirs;
    private final LockProvider provider;
    private final Backend backend;
    private final Duration slack;
    private final ExecutorService contenders = Executors.newCachedThreadPool(task -> {
        Thread thread = new Thread(task, "model-contender");
        thread.setDaemon(true);
        return thread;
    });
    private final AtomicLong runs = new AtomicLong();

    /** Key and family to holder ("mine", "theirs") and type: the overlap counter. */
    private final Map<String, Map<String, LockType>> holders = new HashMap<>();
    /** Key and family to the highest token seen: the fenced register. */
    private final Map<String, Long> tokens = new HashMap<>();
    private final List<String> violations = new CopyOnWriteArrayList<>();

    ModelRunner(LockProvider provider, LockProvider second, String prefix, Duration slack) {
        this.provider = provider;
        this.mine = new DefaultLockTemplate(provider, prefix, Duration.ZERO, null, List.of());
        this.theirs = new DefaultLockTemplate(second, prefix, Duration.ZERO, null, List.of());
        this.backend = new Backend(provider::supports, provider.supportsPermits(), TRANSACTIONS);
        this.slack = slack;
    }

    Backend backend() {
        return backend;
    }

    /** Runs {@code c} on keys of its own; {@code null} when all went as the model says, else what did not. */
    @Nullable String run(Case c) {
        String run = "m" + runs.incrementAndGet() + ":";
        synchronized (this) {
            holders.clear();
            tokens.clear();
        }
        violations.clear();
        List<String> report = new ArrayList<>();
        CountDownLatch contenderHolds = new CountDownLatch(1);
        CountDownLatch contenderMayGo = new CountDownLatch(1);
        AtomicReference<Object> contenderOutcome = new AtomicReference<>();
        Future<?> contenderCall = null;
        Contender contender = null;
        Object[] observed = new Object[c.nest().size()];
        List<Set<Outcome>> allowed = new ArrayList<>();
        try {
            if (c.contender() != null) {
                Call call = c.contender();
                contenderCall = contenders.submit(() -> {
                    try {
                        LockOptions options = call.opts().options();
                        theirs.execute(keys(run, call), options, () -> {
                            Map<String, Hold> holds = holds(call, Map.of());
                            List<Runnable> exits = enter("theirs", run, call, holds, Set.of());
                            contenderOutcome.set(Outcome.GRANTED);
                            contenderHolds.countDown();
                            try {
                                contenderMayGo.await(60, TimeUnit.SECONDS);
                            }
                            finally {
                                exits.forEach(Runnable::run);
                            }
                            return null;
                        });
                    }
                    catch (Throwable ex) {
                        contenderOutcome.compareAndSet(null, ex);
                    }
                    finally {
                        contenderHolds.countDown();
                    }
                });
                if (!contenderHolds.await(slack.toMillis() + 60_000, TimeUnit.MILLISECONDS)) {
                    return "the contender neither held nor failed within " + slack;
                }
                Object outcome = contenderOutcome.get();
                Set<Outcome> theirsAllowed = LockCallModel.allowed(backend, call, Map.of(), null);
                Outcome seen = classify(outcome, call, run, report);
                if (seen == null || !theirsAllowed.contains(seen)) {
                    report.add("contender: " + describe(outcome) + ", the model allows " + theirsAllowed);
                    return String.join("\n", report);
                }
                contender = new Contender(call, seen == Outcome.GRANTED);
            }
            try {
                level(run, c, 0, Map.of(), observed, allowed, contender);
            }
            catch (Throwable expected) {
                // recorded at its level
            }
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
        finally {
            contenderMayGo.countDown();
            if (contenderCall != null) {
                try {
                    contenderCall.get(slack.toMillis() + 60_000, TimeUnit.MILLISECONDS);
                }
                catch (Exception ex) {
                    report.add("the contender did not end: " + ex);
                }
            }
        }
        for (int i = 0; i < observed.length; i++) {
            if (observed[i] == null) {
                report.add("level " + i + ": not reached, though every level above it ran");
                break;
            }
            Outcome seen = classify(observed[i], c.nest().get(i), run, report);
            if (seen == null || !allowed.get(i).contains(seen)) {
                report.add("level " + i + " (" + c.nest().get(i).shape() + "): " + describe(observed[i])
                        + ", the model allows " + allowed.get(i));
            }
            if (seen != Outcome.GRANTED) {
                break;
            }
        }
        report.addAll(violations);
        try {
            report.addAll(released(run, c));
        }
        catch (AssertionError ex) {
            // the backend failed the third owner: part of the case's report, so that it is shrunk and printed
            report.add(ex.getMessage() + ": " + describe(ex.getCause()));
        }
        return report.isEmpty() ? null : String.join("\n", report);
    }

    private void level(String run, Case c, int i, Map<String, Hold> held, Object[] observed, List<Set<Outcome>> allowed,
            Contender contender) throws Throwable {
        Call call = c.nest().get(i);
        allowed.add(LockCallModel.allowed(backend, call, held, contender));
        AtomicReference<Throwable> fromInside = new AtomicReference<>();
        LockCallback<Object, Throwable> body = () -> {
            observed[i] = Outcome.GRANTED;
            Map<String, Hold> holds = holds(call, (call.shape() == Shape.ASYNC) ? Map.of() : held);
            List<Runnable> exits = enter("mine", run, call, holds, held.keySet());
            try {
                probe(run, call, holds);
                if (i + 1 < c.nest().size()) {
                    level(run, c, i + 1, holds, observed, allowed, contender);
                }
            }
            catch (Throwable ex) {
                fromInside.set(ex);
                throw ex;
            }
            finally {
                exits.forEach(Runnable::run);
            }
            return "ran";
        };
        List<String> keys = keys(run, call);
        try {
            LockOptions options = call.opts().options();
            switch (call.shape()) {
                case BLOCKING -> mine.execute(keys, options, body);
                case TRY -> {
                    if (!mine.tryExecute(keys, options, body).acquired()) {
                        observed[i] = Outcome.BUSY;
                    }
                }
                case ASYNC -> {
                    CompletableFuture<Object> result = mine.executeAsync(keys, options, () -> {
                        try {
                            body.doInLock();
                        }
                        catch (Throwable ex) {
                            return CompletableFuture.failedFuture(ex);
                        }
                        return CompletableFuture.supplyAsync(() -> "completed elsewhere");
                    });
                    try {
                        result.get(slack.toMillis() + 60_000, TimeUnit.MILLISECONDS);
                    }
                    catch (ExecutionException ex) {
                        throw ex.getCause();
                    }
                }
                case TX_COMMIT, TX_ROLLBACK -> ModelTransactions.inTransaction(call.shape() == Shape.TX_COMMIT, () -> {
                    try {
                        return mine.execute(keys, options, body);
                    }
                    catch (Throwable ex) {
                        throw sneaky(ex);
                    }
                });
            }
        }
        catch (Throwable ex) {
            if (observed[i] == null) {
                observed[i] = ex;
            }
            else if (ex != fromInside.get()) {
                violations.add("level " + i + ": its code ran, then the call threw " + describe(ex));
            }
            throw ex;
        }
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> RuntimeException sneaky(Throwable ex) throws E {
        throw (E) ex;
    }

    /** What this thread holds for each key once {@code call} runs: the outer hold where it re-entered one. */
    private static Map<String, Hold> holds(Call call, Map<String, Hold> outer) {
        Map<String, Hold> holds = new LinkedHashMap<>(outer);
        for (String key : call.keys()) {
            holds.putIfAbsent(key, new Hold(call.opts().type(), call.opts().permits(), call.opts().shortLease()));
        }
        return holds;
    }

    private List<String> keys(String run, Call call) {
        return call.keys().stream().map(key -> run + key).toList();
    }

    /** Counts the holder in (overlap counter) and checks its token (fenced register); returns what counts it out. */
    private List<Runnable> enter(String holder, String run, Call call, Map<String, Hold> holds, Set<String> outerKeys) {
        List<Runnable> exits = new ArrayList<>();
        for (String key : call.keys()) {
            Hold hold = holds.get(key);
            String family = key + "|" + LockCallModel.family(hold.type());
            if (call.opts().fenced()) {
                register(holder, run, key, family, outerKeys.contains(key));
            }
            if (hold.shortLease()) {
                continue;
            }
            String counted = family + "|" + hold.permits();
            synchronized (this) {
                Map<String, LockType> inside = holders.computeIfAbsent(counted, k -> new HashMap<>());
                if (inside.containsKey(holder)) {
                    continue;
                }
                inside.put(holder, hold.type());
                boolean exclusive = inside.values().stream().anyMatch(LockType::exclusive);
                if ((hold.permits() == 1 && exclusive && inside.size() > 1) || (hold.permits() > 1 && inside.size() > hold.permits())) {
                    violations.add("two holders at once of " + run + counted + ": " + inside);
                }
            }
            exits.add(() -> {
                synchronized (this) {
                    holders.get(counted).remove(holder);
                }
            });
        }
        return exits;
    }

    private synchronized void register(String holder, String run, String key, String family, boolean reentered) {
        java.util.OptionalLong token = LockContext.fencingToken(mine.fullKey(run + key));
        if (token.isEmpty()) {
            violations.add(holder + ": a fenced call on " + run + key + " runs without a token");
            return;
        }
        Long last = tokens.get(family);
        if (last != null && (reentered ? token.getAsLong() < last : token.getAsLong() <= last)) {
            violations.add(holder + ": token " + token.getAsLong() + " of " + run + key + " is not above the last one "
                    + "accepted (" + last + ")" + (reentered ? " (re-entered)" : ""));
        }
        tokens.merge(family, token.getAsLong(), Math::max);
    }

    /** A new owner, asking the provider directly, must be refused every key this body holds. */
    private void probe(String run, Call call, Map<String, Hold> holds) {
        for (String key : call.keys()) {
            Hold hold = holds.get(key);
            if (hold.shortLease() || hold.permits() > 1) {
                continue;
            }
            LockType asked = hold.type().exclusive() ? hold.type() : LockType.WRITE;
            if (!provider.supports(asked, false)) {
                continue;
            }
            LockHandle intruder = acquire(mine.fullKey(run + key), asked, 1, 0);
            if (intruder != null) {
                violations.add("a new owner took " + run + key + " as " + asked + " while a body held it as "
                        + hold.type());
                intruder.release();
            }
        }
    }

    /** After the case, whatever its outcome, a third owner takes every key of every family the case used. */
    private List<String> released(String run, Case c) {
        Map<String, Integer> families = new TreeMap<>();
        List<Call> calls = new ArrayList<>(c.nest());
        if (c.contender() != null) {
            calls.add(c.contender());
        }
        for (Call call : calls) {
            for (String key : call.keys()) {
                LockType asked = call.opts().type().exclusive() ? call.opts().type() : LockType.WRITE;
                asked = (asked == LockType.FAIR) ? LockType.REENTRANT : asked;
                if (provider.supports(asked, false) && (call.opts().permits() == 1 || provider.supportsPermits())) {
                    int permits = (asked == LockType.REENTRANT) ? call.opts().permits() : 1;
                    families.merge(key + "|" + asked + "|" + permits, permits, Math::max);
                }
            }
        }
        List<String> problems = new ArrayList<>();
        for (String family : families.keySet()) {
            String[] parts = family.split("\\|");
            LockType type = LockType.valueOf(parts[1]);
            int permits = Integer.parseInt(parts[2]);
            List<LockHandle> taken = new ArrayList<>();
            for (int p = 0; p < permits; p++) {
                LockHandle handle = acquire(mine.fullKey(run + parts[0]), type, permits, slack.toNanos());
                if (handle == null) {
                    problems.add("not released: a third owner could not take " + run + parts[0] + " as " + type
                            + (permits > 1 ? " (permit " + (p + 1) + " of " + permits + ")" : "") + " within " + slack);
                    break;
                }
                taken.add(handle);
            }
            taken.forEach(LockHandle::release);
        }
        return problems;
    }

    private LockHandle acquire(String fullKey, LockType type, int permits, long waitNanos) {
        try {
            return provider.acquire(new LockRequest(fullKey, waitNanos, 0, false, type, LockOwner.next(), permits))
                    .get(slack.toMillis() + TimeUnit.NANOSECONDS.toMillis(waitNanos), TimeUnit.MILLISECONDS);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", ex);
        }
        catch (Exception ex) {
            throw new AssertionError("the provider failed to answer for " + fullKey + " as " + type, ex);
        }
    }

    /** The outcome {@code observed} stands for, or {@code null} (and a report) when it is none the model knows. */
    private @Nullable Outcome classify(Object observed, Call call, String run, List<String> report) {
        if (observed instanceof Outcome outcome) {
            return outcome;
        }
        Throwable failure = (Throwable) observed;
        String message = String.valueOf(failure.getMessage());
        boolean namesKey = call.keys().stream().anyMatch(key -> message.contains(mine.fullKey(run + key)));
        Outcome outcome;
        if (failure instanceof NestedLockException) {
            outcome = Outcome.NESTED;
        }
        else if (failure instanceof LockAcquisitionException) {
            outcome = (failure.getCause() != null && String.valueOf(failure.getCause().getMessage()).contains("lost"))
                    ? Outcome.LOST : Outcome.BUSY;
        }
        else if (failure instanceof IllegalArgumentException) {
            outcome = Outcome.BAD_OPTION;
            namesKey = List.of("waitTime", "leaseTime", "holdAtLeast", "permits", call.opts().type().name()).stream()
                    .anyMatch(message::contains);
        }
        else {
            return null;
        }
        if (!namesKey) {
            report.add(outcome + " without naming its key or option: " + describe(failure));
        }
        return outcome;
    }

    private static String describe(Object observed) {
        if (observed instanceof java.util.concurrent.ExecutionException wrapped && wrapped.getCause() != null) {
            return describe(wrapped.getCause());
        }
        if (observed instanceof Throwable failure) {
            return failure.getClass().getName() + ": " + failure.getMessage();
        }
        return String.valueOf(observed);
    }

    @Override
    public void close() {
        mine.shutdown();
        theirs.shutdown();
        contenders.shutdownNow();
    }
}

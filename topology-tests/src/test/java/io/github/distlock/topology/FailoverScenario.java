package io.github.distlock.topology;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

import io.github.distlock.LockContext;
import io.github.distlock.LockListener;
import io.github.distlock.LockOptions;
import io.github.distlock.LockResult;
import io.github.distlock.LockTemplate;
import io.github.distlock.redisson.autoconfigure.RedissonConfigCustomizer;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.testsupport.RespClient;
import org.redisson.config.Config;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationContext;

import static org.awaitility.Awaitility.await;

/**
 * A master of a replicated deployment dies (SIGKILL) while locks are held and {@value #WORKERS} threads per
 * application keep locking and unlocking; the replica is promoted. Runs three applications on the same servers at the
 * same time, so they see the very same failover:
 *
 * <ul>
 * <li>{@code on}: Redisson's {@code checkLockSyncedSlaves} on (its default), the settings docs/deployment.md
 * recommends (command timeout {@value #COMMAND_TIMEOUT_MS} ms, {@value #RETRY_ATTEMPTS} retry after
 * {@value #RETRY_DELAY_MS} ms, topology scan every {@value #SCAN_INTERVAL_MS} ms);</li>
 * <li>{@code off}: the same with {@code checkLockSyncedSlaves} off;</li>
 * <li>{@code defaults}: one thread, the defaults for everything (what an application gets that sets nothing: command
 * timeout 3 s, distlock's retry budget, Redisson's topology scan, watchdog 30 s): how long recovery takes without
 * tuning.</li>
 * </ul>
 *
 * <p>Phases: (1) the cost of the setting: {@code on} and {@code off} alone in turn, lock cycles on distinct keys;
 * (2) steady load, and locks held by holders that stay inside their method; (3) the replica stalls: it stops reading
 * (SIGSTOP) with tens of MB of replication stream still queued on the master, as a replica on a congested link would,
 * and more holders lock keys of that master; (4) the master is killed and the replica thawed, so it is promoted
 * without the writes that never reached it; (5) the applications recover by themselves.
 *
 * <p>Every method body checks, in the master that serves its key now, that the lock is there, its client's, and that
 * the fencing counter still carries the body's own token (no one locked the key since); a check is conclusive only
 * when no master died since the call began: a lock taken before a kill may rightly be gone after it (that is what the
 * held locks measure).
 */
final class FailoverScenario {

    /**
     * Long enough that a lock acknowledged by the replica outlives on the promoted replica the replica's lag plus the
     * failover (its copy there carries the expiry of the last renewal that reached it): measured with 10 s, two of
     * three such locks expired on the promoted replica after a 6 s lag and a 2 s failover.
     */
    static final Duration WATCHDOG = Duration.ofSeconds(15);
    static final long COMMAND_TIMEOUT_MS = 500;
    static final int RETRY_ATTEMPTS = 1;
    static final long RETRY_DELAY_MS = 200;
    static final int SCAN_INTERVAL_MS = 1000;
    static final Duration WAIT = Duration.ofMillis(200);
    /** Redisson's {@code slavesSyncTimeout}: how long a lock operation's WAIT waits for the replica. */
    static final long SLAVES_SYNC_TIMEOUT_MS = new Config().getSlavesSyncTimeout();
    static final int WORKERS = 8;
    static final int WORKER_KEYS = 24;
    static final int HELD = 3;
    static final int STALLED = 3;
    /**
     * Queued on the master behind the stalled replica: more than the kernel's socket buffers on loopback hold (a few MB
     * each way), so the lock writes that follow stay in the dead master's memory instead of reaching the replica later.
     */
    static final int FILLER_BYTES = 32 << 20;
    static final int COST_ROUNDS = 3;
    static final int COST_CYCLES_PER_THREAD = 40;
    /** How long a waiter subscribed before the failover waits; far longer than the run needs. */
    static final Duration WAITER_WAIT = Duration.ofSeconds(60);

    /*
     * Epochs of the run, for deciding whether a body's check is conclusive. A call begun BEFORE may hold a lock on the
     * master about to die; one begun AFTER (the master's process is gone) can only hold a lock on a live master; one
     * begun while KILLING may be either. A check counts only if the epoch did not change during the call and is not
     * KILLING: then the master the check asks is the one that granted the lock.
     */
    private static final int BEFORE = 0;
    private static final int KILLING = 1;
    private static final int AFTER = 2;

    private final Topology topology;
    private final RedisView view;
    private final AtomicInteger epoch = new AtomicInteger(BEFORE);
    final Queue<String> violations = new ConcurrentLinkedQueue<>();

    FailoverScenario(Topology topology) {
        this.topology = topology;
        this.view = topology.view();
        this.on = new Side("on", true, true, WORKERS);
        this.off = new Side("off", false, true, WORKERS);
        this.defaults = new Side("defaults", true, false, 1);
    }

    /** One call of a locked method, as its caller saw it. */
    record Call(String key, boolean onVictim, long start, long end, Throwable failure) {

        long millis() {
            return (end - start) / 1_000_000;
        }
    }

    /** The token a body saw, and when it ran. */
    record TokenUse(String key, long token, long at) {
    }

    /** An acquisition by a holder: when it started, when it ended, its token, or why it failed. */
    record Holding(String key, long start, long end, long token, Throwable failure) {

        long millis() {
            return (end - start) / 1_000_000;
        }
    }

    /** One application and everything it did. */
    final class Side {

        final String name;
        final boolean checkSynced;
        final boolean recommended;
        final int workers;
        final RecordingListener events = new RecordingListener();
        final List<String> workerKeys;
        final List<String> heldKeys;
        final List<String> stalledKeys;
        final Set<String> victimKeys;
        final Queue<Call> calls = new ConcurrentLinkedQueue<>();
        final Queue<TokenUse> tokens = new ConcurrentLinkedQueue<>();
        final Map<String, AtomicInteger> inside = new ConcurrentHashMap<>();
        final AtomicLong verified = new AtomicLong();
        final AtomicLong inconclusive = new AtomicLong();
        final Map<String, Holding> held = new ConcurrentHashMap<>();
        final Map<String, Holding> stalled = new ConcurrentHashMap<>();
        final List<double[]> costRounds = new ArrayList<>();
        /** While set, the side's workers park before their next call (see {@link FailoverScenario#pauseDefaults()}). */
        volatile CountDownLatch paused;
        final AtomicInteger parked = new AtomicInteger();
        volatile long waiterInAt;
        volatile Throwable waiterFailure;
        LockTemplate locks;
        String clientId;

        Side(String name, boolean checkSynced, boolean recommended, int workers) {
            this.name = name;
            this.checkSynced = checkSynced;
            this.recommended = recommended;
            this.workers = workers;
            this.workerKeys = recommended
                    ? Topology.keys(name + ":w:", WORKER_KEYS, key -> true)
                    : Topology.keys(name + ":w:", 1, topology::servedByVictim);
            this.heldKeys = Topology.keys(name + ":held:", HELD, topology::servedByVictim);
            this.stalledKeys = Topology.keys(name + ":stalled:", STALLED, topology::servedByVictim);
            this.victimKeys = workerKeys.stream().map(key -> Keys.PREFIX + key).filter(topology::servedByVictim)
                    .collect(Collectors.toSet());
        }

        ApplicationContextRunner app() {
            ApplicationContextRunner app = topology.app(recommended ? WATCHDOG : Duration.ofSeconds(30))
                    .withBean("syncedSlaves", RedissonConfigCustomizer.class,
                            () -> config -> config.setCheckLockSyncedSlaves(checkSynced))
                    .withBean(LockListener.class, () -> events);
            if (!recommended) {
                return app;
            }
            return app
                    .withPropertyValues("spring.data.redis.timeout=" + COMMAND_TIMEOUT_MS + "ms",
                            "spring.data.redis.connect-timeout=" + COMMAND_TIMEOUT_MS + "ms",
                            "distlock.redis.retry-attempts=" + RETRY_ATTEMPTS,
                            "distlock.redis.retry-delay=" + RETRY_DELAY_MS + "ms")
                    .withBean("scan", RedissonConfigCustomizer.class, () -> topology.scanInterval(SCAN_INTERVAL_MS));
        }

        void started(ApplicationContext context) {
            locks = context.getBean(LockTemplate.class);
            clientId = context.getBean(RedissonLockProvider.class).getRedisson().getId();
        }

        LockOptions options() {
            return recommended ? new LockOptions(WAIT, LockOptions.WATCHDOG, true)
                    : new LockOptions(Duration.ZERO, LockOptions.WATCHDOG, true);
        }

        @Override
        public String toString() {
            return name;
        }
    }

    final Side on;
    final Side off;
    final Side defaults;

    // what the run measured, for the test's assertions and the measurement lines
    long killedAt;
    long promotedAt;
    long stallStartedAt;
    int newMasterPort;
    final Map<Side, Long> recoveredAt = new HashMap<>();
    final Map<Side, List<String>> survived = new HashMap<>();
    final Map<Side, List<String>> lost = new HashMap<>();
    final Map<String, Long> takenWhileHeldTokens = new LinkedHashMap<>();
    long holdersReleasedAt;
    long leftBehindMs;
    final List<LeftBehind> leftBehind = new ArrayList<>();
    /** Worker lock keys on the promoted master when the servers had promoted it, and their owner fields. */
    final Map<String, String> atPromotion = new HashMap<>();
    final Map<Side, List<String>> zombies = new HashMap<>();
    long zombiesCheckedAt;

    /**
     * A lock key still there when every call has ended.
     *
     * @param zombie whether the promoted master already had it, same owner, at promotion: a lock its holder released
     * on the old master, resurrected because the release never reached the replica
     * @param writtenAfterKillMs when it was written or last renewed, from its remaining time to live
     */
    record LeftBehind(String key, String owner, boolean zombie, long writtenAfterKillMs) {
    }

    void run() throws Throwable {
        on.app().run(onContext -> off.app().run(offContext -> defaults.app().run(defaultsContext -> {
            on.started(onContext);
            off.started(offContext);
            defaults.started(defaultsContext);
            measureCost();
            underLoad();
        })));
    }

    /** Lock cycles of {@code on} and {@code off} in turn, each alone, on distinct keys: the cost of the setting. */
    private void measureCost() throws InterruptedException {
        for (int round = 0; round < COST_ROUNDS; round++) {
            for (Side side : List.of(on, off)) {
                Map<String, Long> before = waitCalls();
                long start = System.nanoTime();
                List<Thread> threads = new ArrayList<>();
                for (int t = 0; t < WORKERS; t++) {
                    String prefix = "cost:" + side.name + ":" + t + ":";
                    threads.add(start("cost-" + side + "-" + t, () -> {
                        for (int i = 0; i < COST_CYCLES_PER_THREAD; i++) {
                            side.locks.run(prefix + (i % 16), () -> { });
                        }
                    }));
                }
                for (Thread thread : threads) {
                    thread.join();
                }
                long elapsed = System.nanoTime() - start;
                int cycles = WORKERS * COST_CYCLES_PER_THREAD;
                Map<String, Long> after = waitCalls();
                long waits = after.keySet().stream().mapToLong(k -> after.get(k) - before.getOrDefault(k, 0L)).sum();
                side.costRounds.add(new double[] {elapsed / 1000.0 / cycles, (double) waits / cycles});
            }
        }
    }

    /** {@code WAIT} calls so far, per master. */
    private Map<String, Long> waitCalls() {
        Map<String, Long> calls = new HashMap<>();
        for (int port : topology.masterPorts()) {
            String stats = RespClient.callOnce(port, "INFO", "commandstats").toString();
            long count = 0;
            for (String line : stats.split("\r?\n")) {
                if (line.startsWith("cmdstat_wait:")) {
                    count = Long.parseLong(line.substring(line.indexOf("calls=") + 6, line.indexOf(',')));
                }
            }
            calls.put(Integer.toString(port), count);
        }
        return calls;
    }

    private void underLoad() throws Exception {
        CountDownLatch stop = new CountDownLatch(1);
        CountDownLatch releaseHolders = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        try {
            for (Side side : List.of(on, off, defaults)) {
                for (int t = 0; t < side.workers; t++) {
                    threads.add(start("worker-" + side + "-" + t, () -> work(side, stop)));
                }
            }
            await().atMost(Duration.ofSeconds(30)).until(() -> successes(on, 0) >= 30 && successes(off, 0) >= 30
                    && successes(defaults, 0) >= 3);
            // locks held from just before the replica stalls: replicated, and acknowledged by the replica (WAIT)
            CountDownLatch heldIn = new CountDownLatch(2 * HELD);
            for (Side side : List.of(on, off)) {
                for (String key : side.heldKeys) {
                    threads.add(start("holder-" + key, () -> hold(side, key, side.held, heldIn, releaseHolders)));
                }
            }
            Latches.await(heldIn);
            // a waiter per application for a held key, subscribed to its release on the master that will die
            for (Side side : List.of(on, off)) {
                threads.add(start("waiter-" + side, () -> waitFor(side)));
                String channel = "redisson_lock__channel:{" + Keys.PREFIX + side.heldKeys.get(0) + "}";
                await().atMost(Duration.ofSeconds(10)).until(() -> (Long) ((List<?>) RespClient.callOnce(
                        topology.victimPort(), "PUBSUB", "NUMSUB", channel)).get(1) >= 1);
            }

            pauseDefaults();
            stallReplicaAndHoldMore(releaseHolders, threads);

            epoch.set(KILLING);
            topology.killVictim();
            epoch.set(AFTER);
            killedAt = System.nanoTime();
            Signals.resume(topology.victimReplica().pid());
            resumeDefaults();
            newMasterPort = topology.awaitPromotion(Duration.ofSeconds(30));
            promotedAt = System.nanoTime();
            for (String key : view.keysOn(newMasterPort, Keys.PREFIX + "*:w:*")) {
                atPromotion.put(key, String.join(",", view.hash(key).keySet()));
            }

            // which held locks the promoted replica has: asked at once, before anyone could take a lost one
            for (Side side : List.of(on, off)) {
                List<String> present = new ArrayList<>();
                List<String> gone = new ArrayList<>();
                for (Holding holding : side.held.values().stream().filter(h -> h.failure() == null).toList()) {
                    boolean mine = view.hash(holding.key()).keySet().stream().anyMatch(f -> f.startsWith(side.clientId + ":"));
                    (mine ? present : gone).add(holding.key());
                }
                for (Holding holding : side.stalled.values().stream().filter(h -> h.failure() == null).toList()) {
                    boolean mine = view.hash(holding.key()).keySet().stream().anyMatch(f -> f.startsWith(side.clientId + ":"));
                    (mine ? present : gone).add(holding.key());
                }
                survived.put(side, present);
                lost.put(side, gone);
            }

            // the applications recover by themselves: calls on the promoted master's keys succeed again
            for (Side side : List.of(on, off, defaults)) {
                await().atMost(Duration.ofSeconds(60)).until(() -> side.calls.stream()
                        .filter(c -> c.onVictim() && c.start() > promotedAt && c.failure() == null).count()
                        >= (side.recommended ? 10 : 1));
                recoveredAt.put(side, side.calls.stream()
                        .filter(c -> c.onVictim() && c.start() > killedAt && c.failure() == null)
                        .mapToLong(Call::end).min().orElseThrow());
            }

            // a lost lock is reported while its holder still runs: the lease monitor finds it gone
            for (Side side : List.of(on, off)) {
                await().atMost(WATCHDOG.plusSeconds(5))
                        .until(() -> lost.get(side).stream().allMatch(side.events::lost));
            }
            // locks the promoted master had at promotion and that the same owner still holds now, seconds later: bodies
            // last milliseconds, so these are locks released on the old master whose release never reached the replica
            zombiesCheckedAt = System.nanoTime();
            for (Side side : List.of(on, off)) {
                zombies.put(side, atPromotion.entrySet().stream()
                        .filter(entry -> entry.getKey().startsWith(Keys.PREFIX + side.name + ":"))
                        .filter(entry -> String.join(",", view.hash(entry.getKey()).keySet()).equals(entry.getValue()))
                        .map(Map.Entry::getKey).toList());
            }
            // ... and it is lost indeed: another application takes it while the holder is still inside its method,
            // with a higher fencing token, which is what lets storage refuse the stale holder
            for (Side side : List.of(on, off)) {
                Side other = (side == on) ? off : on;
                for (String key : lost.get(side)) {
                    LockResult<Long> taken = other.locks.tryExecute(key.substring(Keys.PREFIX.length()),
                            new LockOptions(Duration.ZERO, LockOptions.WATCHDOG, true),
                            () -> LockContext.fencingToken().orElseThrow());
                    takenWhileHeldTokens.put(key, taken.acquired() ? taken.value() : -1L);
                }
            }
            // the waiters subscribed before the failover hear of the release on the promoted master
            holdersReleasedAt = System.nanoTime();
            releaseHolders.countDown();
            await().atMost(WAITER_WAIT).until(() -> List.of(on, off).stream()
                    .allMatch(side -> side.waiterInAt != 0 || side.waiterFailure != null));
        }
        finally {
            try {
                Signals.resume(topology.victimReplica().pid());
            }
            catch (RuntimeException ex) {
                // already running (thawed above) or never stalled: nothing to undo
            }
            releaseHolders.countDown();
            stop.countDown();
            resumeDefaults();
            for (Thread thread : threads) {
                thread.join(60_000);
            }
        }
        // nothing stays locked: acquisitions whose reply the dead master never sent are given back
        long finishedAt = System.nanoTime();
        for (int port : topology.masterPorts()) {
            for (String key : view.keysOn(port, Keys.PREFIX + "*")) {
                long pttl = (Long) view.callOn(port, "PTTL", key);
                String owner = String.join(",", view.hash(key).keySet());
                // a watchdog lock nobody renews was written (or last renewed) a watchdog timeout before it expires
                leftBehind.add(new LeftBehind(key, owner, atPromotion.getOrDefault(key, "").equals(owner),
                        millis(killedAt, System.nanoTime()) - (WATCHDOG.toMillis() - pttl)));
            }
        }
        await().atMost(WATCHDOG.plusSeconds(10)).until(() -> topology.masterPorts().stream()
                .allMatch(port -> view.keysOn(port, Keys.PREFIX + "*").isEmpty()));
        leftBehindMs = (System.nanoTime() - finishedAt) / 1_000_000;
    }

    /**
     * The {@code defaults} application measures how a failover alone is recovered from with Redisson's defaults, so it
     * sits the replica's stall out: a lock it released during the stall would come back to life on the promoted replica
     * (the release never reached it) and block its one key for its default 30 s watchdog timeout, as the {@code off}
     * application's measurements show for its keys.
     */
    private void pauseDefaults() {
        defaults.paused = new CountDownLatch(1);
        await().atMost(Duration.ofSeconds(60)).until(() -> defaults.parked.get() == defaults.workers);
    }

    private void resumeDefaults() {
        CountDownLatch paused = defaults.paused;
        defaults.paused = null;
        if (paused != null) {
            paused.countDown();
        }
    }

    private void stallReplicaAndHoldMore(CountDownLatch releaseHolders, List<Thread> threads) {
        Signals.stop(topology.victimReplica().pid());
        stallStartedAt = System.nanoTime();
        String filler = java.util.stream.IntStream.iterate(0, i -> i + 1).mapToObj(i -> "filler:" + i)
                .filter(topology::servedByVictim).findFirst().orElseThrow();
        try (RespClient master = RespClient.connect(topology.victimPort(), Duration.ofSeconds(10))) {
            master.call("SET", filler, "x".repeat(FILLER_BYTES));
        }
        CountDownLatch tried = new CountDownLatch(2 * STALLED);
        for (Side side : List.of(on, off)) {
            for (String key : side.stalledKeys) {
                threads.add(start("stalled-" + key, () -> hold(side, key, side.stalled, tried, releaseHolders)));
            }
        }
        Latches.await(tried);
    }

    /** Takes a fenced watchdog lock and stays inside the method until released; records how it went. */
    private void hold(Side side, String key, Map<String, Holding> record, CountDownLatch tried,
            CountDownLatch releaseHolders) {
        String fullKey = Keys.PREFIX + key;
        long start = System.nanoTime();
        try {
            side.locks.run(key, new LockOptions(Duration.ZERO, LockOptions.WATCHDOG, true), () -> {
                record.put(fullKey, new Holding(fullKey, start, System.nanoTime(),
                        LockContext.fencingToken().orElseThrow(), null));
                tried.countDown();
                Latches.await(releaseHolders);
            });
        }
        catch (Throwable ex) {
            if (!record.containsKey(fullKey)) {
                record.put(fullKey, new Holding(fullKey, start, System.nanoTime(), -1, ex));
                tried.countDown();
            }
        }
    }

    private void waitFor(Side side) {
        try {
            side.locks.run(side.heldKeys.get(0), new LockOptions(WAITER_WAIT, LockOptions.WATCHDOG, false),
                    () -> side.waiterInAt = System.nanoTime());
        }
        catch (Throwable ex) {
            side.waiterFailure = ex;
        }
    }

    private void work(Side side, CountDownLatch stop) {
        while (stop.getCount() > 0) {
            CountDownLatch paused = side.paused;
            if (paused != null) {
                side.parked.incrementAndGet();
                Latches.await(paused);
                side.parked.decrementAndGet();
            }
            String key = side.workerKeys.get(ThreadLocalRandom.current().nextInt(side.workerKeys.size()));
            String fullKey = Keys.PREFIX + key;
            int epochAtStart = epoch.get();
            long start = System.nanoTime();
            Throwable failure = null;
            try {
                side.locks.run(key, side.options(), () -> body(side, fullKey, epochAtStart));
            }
            catch (Throwable ex) {
                failure = ex;
            }
            side.calls.add(new Call(fullKey, side.victimKeys.contains(fullKey), start, System.nanoTime(), failure));
        }
    }

    private void body(Side side, String fullKey, int epochAtStart) {
        AtomicInteger inside = side.inside.computeIfAbsent(fullKey, k -> new AtomicInteger());
        if (inside.incrementAndGet() != 1) {
            violations.add(side + ": two bodies of " + fullKey + " at once in one application");
        }
        try {
            long token = LockContext.fencingToken().orElse(-1);
            side.tokens.add(new TokenUse(fullKey, token, System.nanoTime()));
            Map<String, String> hash;
            String counter;
            try {
                hash = view.hash(fullKey);
                counter = view.get(Keys.fencingCounter(fullKey));
            }
            catch (RuntimeException ex) {
                // the master is gone or not yet replaced: no answer, which says nothing about the lock
                side.inconclusive.incrementAndGet();
                return;
            }
            int now = epoch.get();
            if (now != epochAtStart || now == KILLING) {
                // a master died since the call began: the lock may have been lost with it, which is measured elsewhere
                side.inconclusive.incrementAndGet();
                return;
            }
            side.verified.incrementAndGet();
            boolean ours = hash.size() == 1 && hash.keySet().iterator().next().startsWith(side.clientId + ":");
            if (!ours) {
                violations.add(side + ": body of " + fullKey + " ran while its master holds " + hash);
            }
            if (token < 0 || !Long.toString(token).equals(counter)) {
                violations.add(side + ": body of " + fullKey + " with token " + token + " ran while the counter is "
                        + counter);
            }
        }
        finally {
            inside.decrementAndGet();
        }
    }

    private static Thread start(String name, Runnable task) {
        Thread thread = new Thread(task, name);
        thread.start();
        return thread;
    }

    static long successes(Side side, long after) {
        return side.calls.stream().filter(c -> c.start() > after && c.failure() == null).count();
    }

    /** Per key, the tokens bodies saw in the order the bodies ran: each must be higher than the one before. */
    static List<String> tokensNotRising(Collection<TokenUse> uses) {
        List<String> problems = new ArrayList<>();
        uses.stream().collect(Collectors.groupingBy(TokenUse::key)).forEach((key, list) -> {
            List<TokenUse> ordered = list.stream().sorted((a, b) -> Long.compare(a.at(), b.at())).toList();
            for (int i = 1; i < ordered.size(); i++) {
                if (ordered.get(i).token() <= ordered.get(i - 1).token()) {
                    problems.add(key + ": " + ordered.get(i - 1).token() + " then " + ordered.get(i).token());
                }
            }
        });
        return problems;
    }

    static long millis(long fromNanos, long toNanos) {
        return (toNanos - fromNanos) / 1_000_000;
    }

    /** Median of the rounds' microseconds per cycle, and WAIT commands per cycle. */
    static double[] cost(Side side) {
        double[] micros = side.costRounds.stream().mapToDouble(r -> r[0]).sorted().toArray();
        double waits = side.costRounds.stream().mapToDouble(r -> r[1]).average().orElse(0);
        return new double[] {micros[micros.length / 2], waits};
    }

    /** Outcomes of calls begun in {@code [from, to)}: {@code ok} or the exception's simple name, counted. */
    static Map<String, Long> outcomes(Side side, long from, long to) {
        return side.calls.stream().filter(c -> c.start() >= from && c.start() < to)
                .collect(Collectors.groupingBy(c -> c.failure() == null ? "ok" : c.failure().getClass().getSimpleName(),
                        java.util.TreeMap::new, Collectors.counting()));
    }

    static String describe(Throwable failure) {
        StringBuilder text = new StringBuilder(failure.getClass().getSimpleName());
        for (Throwable cause = failure.getCause(); cause != null && cause != cause.getCause(); cause = cause.getCause()) {
            text.append(" <- ").append(cause.getClass().getSimpleName());
        }
        return text.toString();
    }

    /** The measurement lines of this run. */
    String report() {
        StringBuilder text = new StringBuilder();
        String name = topology.name();
        text.append(String.format("MEASURED %s failover: master killed -> replica promoted (servers agree) in %d ms; "
                + "replica stalled %d ms before the kill%n", name, millis(killedAt, promotedAt),
                millis(stallStartedAt, killedAt)));
        for (Side side : List.of(on, off, defaults)) {
            long recovered = recoveredAt.get(side);
            List<Call> failed = side.calls.stream().filter(c -> c.failure() != null).toList();
            text.append(String.format("MEASURED %s %s: first success on the killed master's keys %d ms after the kill "
                    + "(%d ms after promotion); calls before stall %s, during stall %s, kill->recovery %s, after %s; "
                    + "worst failed call %d ms, worst call %d ms; failures %s; bodies verified %d, inconclusive %d%n",
                    name, side, millis(killedAt, recovered), millis(promotedAt, recovered),
                    outcomes(side, 0, stallStartedAt), outcomes(side, stallStartedAt, killedAt),
                    outcomes(side, killedAt, recovered), outcomes(side, recovered, Long.MAX_VALUE),
                    failed.stream().mapToLong(Call::millis).max().orElse(0),
                    side.calls.stream().mapToLong(Call::millis).max().orElse(0),
                    failed.stream().map(c -> describe(c.failure())).collect(Collectors.groupingBy(d -> d,
                            java.util.TreeMap::new, Collectors.counting())),
                    side.verified.get(), side.inconclusive.get()));
            if (side.recommended) {
                double[] cost = cost(side);
                text.append(String.format("MEASURED %s %s: cost %.0f us per lock cycle (median of %d rounds, %d threads),"
                        + " %.2f WAIT per cycle; held before stall: %s; stalled acquisitions: %s; survived promotion %s,"
                        + " lost %s, reported lost %s%n", name, side, cost[0], COST_ROUNDS, WORKERS, cost[1],
                        side.held.values().stream().map(h -> h.failure() == null ? "held" : describe(h.failure())).toList(),
                        side.stalled.values().stream().map(h -> (h.failure() == null ? "held" : describe(h.failure()))
                                + " after " + h.millis() + " ms").toList(),
                        survived.get(side).size(), lost.get(side).size(),
                        side.events.leaseLost.stream().map(r -> r.event().key() + " +" + millis(promotedAt, r.at())
                                + " ms").toList()));
                text.append(String.format("MEASURED %s %s: released locks resurrected on the promoted master, still "
                        + "held by their finished owners %d ms after promotion: %s%n", name, side,
                        millis(promotedAt, zombiesCheckedAt), zombies.get(side)));
            }
        }
        for (Side side : List.of(on, off)) {
            text.append(String.format("MEASURED %s %s: waiter subscribed before the failover got the lock %s after its "
                    + "holder was told to release%n", name, side, side.waiterFailure != null ? "never ("
                    + describe(side.waiterFailure) + ")" : millis(holdersReleasedAt, side.waiterInAt) + " ms"));
        }
        text.append(String.format("MEASURED %s lost locks' holders' tokens %s, taken by the other application while "
                + "their holders ran, tokens: %s; worker lock keys on the promoted master at promotion %d; lock keys left behind after every call ended %s, gone %d ms later%n", name,
                off.stalled.values().stream().collect(Collectors.toMap(Holding::key, Holding::token, (a, b) -> a,
                        java.util.TreeMap::new)), takenWhileHeldTokens, atPromotion.size(), leftBehind, leftBehindMs));
        return text.toString();
    }

    /**
     * Bound on a failed call with the recommended settings: the wait; then per attempt (the first and each retry) an
     * {@code INFO} (Redisson asks a master how many replicas it has whenever its count proved wrong), the lock script
     * with its WAIT for the replica, and, when no replica confirmed, the unlock it sends back with its own WAIT; the
     * retry delays; then the token script, which may also time out and be retried.
     */
    static long failedCallBoundMillis() {
        long attempt = COMMAND_TIMEOUT_MS + 2 * (COMMAND_TIMEOUT_MS + SLAVES_SYNC_TIMEOUT_MS);
        long acquire = WAIT.toMillis() + (1 + RETRY_ATTEMPTS) * attempt + RETRY_ATTEMPTS * RETRY_DELAY_MS;
        long token = (1 + RETRY_ATTEMPTS) * COMMAND_TIMEOUT_MS + RETRY_ATTEMPTS * RETRY_DELAY_MS;
        return acquire + token;
    }

    /** Whether {@code failure} or one of its causes is a {@code type}. */
    static boolean causedBy(Throwable failure, Class<? extends Throwable> type) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (type.isInstance(cause)) {
                return true;
            }
            if (cause.getCause() == cause) {
                break;
            }
        }
        return false;
    }
}

package io.github.distlock.reliability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockBackendException;
import io.github.distlock.LockListener;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.redisson.autoconfigure.RedissonConfigCustomizer;
import io.github.distlock.testsupport.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.redisson.config.ConstantDelay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Fault 3: Redis is stopped and started again (empty: no persistence) while locks are held and calls are in flight.
 * Calls must end with a typed error within the configured timeouts, no method body may run without the lock, and the
 * same application (same Redisson client) must lock again once Redis is back. A lock held across the restart is gone:
 * its holder's release reports it lost, and another caller can take the key while the old holder still runs.
 */
class RedisRestartTest {

    private static final Duration WATCHDOG = Duration.ofSeconds(1);
    private static final Duration COMMAND_TIMEOUT = Duration.ofMillis(500);
    private static final int RETRY_ATTEMPTS = 1;
    private static final Duration RETRY_DELAY = Duration.ofMillis(200);
    private static final Duration WAIT = Duration.ofMillis(200);
    private static final int CALLERS = 4;

    /** Its own server, as it is stopped and started. */
    private final RedisServer redis = RedisServer.start();

    @AfterEach
    void stopRedis() {
        redis.close();
    }

    @Test
    void callsFailTypedAndBoundedWhileRedisIsDownNoBodyRunsUnlockedAndLockingResumesWithTheSameClient() throws Exception {
        RecordingListener events = new RecordingListener();
        AtomicInteger generation = new AtomicInteger();
        AtomicInteger phase = new AtomicInteger(UP);
        Queue<Call> calls = new ConcurrentLinkedQueue<>();
        Set<Long> bodiesRun = ConcurrentHashMap.newKeySet();
        Queue<String> violations = new ConcurrentLinkedQueue<>();
        AtomicLong verifiedBodies = new AtomicLong();
        Map<String, Long> unverifiedBodies = new ConcurrentHashMap<>();

        try (RedisInspector redisView = new RedisInspector(redis.port())) {
            Worker worker = new Worker(redisView, generation, phase, bodiesRun, violations, verifiedBodies,
                    unverifiedBodies);
            Distlock.app(redis.port(), WATCHDOG)
                    .withPropertyValues("spring.data.redis.timeout=" + COMMAND_TIMEOUT.toMillis() + "ms",
                            "spring.data.redis.connect-timeout=" + COMMAND_TIMEOUT.toMillis() + "ms")
                    .withBean(RedissonConfigCustomizer.class, () -> config -> config.useSingleServer()
                            .setRetryAttempts(RETRY_ATTEMPTS).setRetryDelay(new ConstantDelay(RETRY_DELAY)))
                    .withBean(LockListener.class, () -> events)
                    .withBean(Worker.class, () -> worker)
                    .run(app -> {
                Worker locked = app.getBean(Worker.class);
                LockTemplate locks = app.getBean(LockTemplate.class);

                // a lock held across the restart
                CountDownLatch heldIn = new CountDownLatch(1);
                CountDownLatch heldMayFinish = new CountDownLatch(1);
                CompletableFuture<Void> heldCall = CompletableFuture.runAsync(() -> locks.run("job:held",
                        LockOptions.waitFor(Duration.ZERO).withLeaseTime(LockOptions.WATCHDOG), () -> {
                            heldIn.countDown();
                            Latches.await(heldMayFinish);
                        }));
                Latches.await(heldIn);

                // calls in flight the whole time
                AtomicLong callIds = new AtomicLong();
                CountDownLatch stopCallers = new CountDownLatch(1);
                List<Thread> callers = new ArrayList<>();
                for (int i = 0; i < CALLERS; i++) {
                    Thread caller = new Thread(() -> {
                        while (stopCallers.getCount() > 0) {
                            long id = callIds.incrementAndGet();
                            int gen = generation.get();
                            int phaseAtCall = phase.get();
                            long start = System.nanoTime();
                            Throwable failure = null;
                            try {
                                locked.work("job:" + (id % 3), id, gen, phaseAtCall, start);
                            }
                            catch (Throwable ex) {
                                failure = ex;
                            }
                            calls.add(new Call(id, gen, start, System.nanoTime(), failure));
                        }
                    }, "caller-" + i);
                    caller.start();
                    callers.add(caller);
                }
                try {
                    await().atMost(Duration.ofSeconds(20)).until(() -> successes(calls, 0) >= 20);

                    // a stop is under way from here until the process has exited: the old server may still grant
                    // locks (it serves until it handles the SIGTERM) that the restart then wipes
                    phase.set(STOPPING);
                    generation.incrementAndGet();
                    redis.stop();
                    long stoppedAt = System.nanoTime();
                    phase.set(DOWN);
                    // stay down until calls begun in the outage have ended, typed errors as the assertions below expect
                    await().atMost(Duration.ofSeconds(20)).until(() -> calls.stream()
                            .filter(c -> c.start() > stoppedAt).count() >= 5);
                    long downMs = (System.nanoTime() - stoppedAt) / 1_000_000;
                    phase.set(RESTARTING);
                    redis.restart();
                    long restartedAt = System.nanoTime();

                    // the same client locks again, without restarting anything
                    await().atMost(Duration.ofSeconds(20)).until(() -> calls.stream()
                            .filter(c -> c.start() > restartedAt && c.failure() == null).count() >= 20);
                    long recoveredMs = calls.stream().filter(c -> c.start() > restartedAt && c.failure() == null)
                            .mapToLong(c -> c.end() - restartedAt).min().orElseThrow() / 1_000_000;

                    // the lock held across the restart is gone: someone else can take the key while its holder runs
                    boolean takenWhileHeld = locks.tryRun("job:held", LockOptions.waitFor(Duration.ZERO), () -> { });
                    stopCallers.countDown();
                    for (Thread caller : callers) {
                        caller.join(30_000);
                    }
                    heldMayFinish.countDown();
                    heldCall.get(30, TimeUnit.SECONDS);

                    Map<String, Long> outcomes = calls.stream().collect(Collectors.groupingBy(
                            c -> (c.failure() == null) ? "ok" : c.failure().getClass().getSimpleName(),
                            Collectors.counting()));
                    long worstMs = calls.stream().mapToLong(Call::millis).max().orElseThrow();
                    long worstFailedMs = calls.stream().filter(c -> c.failure() != null).mapToLong(Call::millis)
                            .max().orElse(0);
                    System.out.printf("MEASURED restart: %d calls %s; Redis down %d ms; worst call %d ms, worst failed "
                            + "call %d ms (wait %d ms, command timeout %d ms, %d retry after %d ms); first success %d ms "
                            + "after restart; %d bodies verified against Redis, not verifiable %s; lock held across the "
                            + "restart taken by "
                            + "another caller meanwhile: %s; its holder's release: lost=%s; failure causes: %s; leases "
                            + "reported lost: %s%n",
                            calls.size(), outcomes, downMs, worstMs, worstFailedMs, WAIT.toMillis(),
                            COMMAND_TIMEOUT.toMillis(), RETRY_ATTEMPTS, RETRY_DELAY.toMillis(), recoveredMs,
                            verifiedBodies.get(), unverifiedBodies, takenWhileHeld,
                            events.leaseLost.stream().anyMatch(e -> e.key().equals("lock:job:held")),
                            calls.stream().filter(c -> c.failure() != null).map(c -> String.valueOf(c.failure().getCause()))
                                    .map(s -> s.length() > 90 ? s.substring(0, 90) : s).distinct().limit(4).toList(),
                            events.leaseLost.stream().map(e -> e.key() + " after " + e.held().toMillis() + " ms").toList());

                    assertThat(violations).as("bodies that ran without holding the lock").isEmpty();
                    assertThat(calls).allSatisfy(c -> assertThat(c.failure()).satisfiesAnyOf(
                            f -> assertThat(f).isNull(),
                            f -> assertThat(f).isInstanceOf(LockBackendException.class),
                            f -> assertThat(f).isInstanceOf(LockAcquisitionException.class)));
                    assertThat(outcomes.getOrDefault("LockBackendException", 0L)).isPositive();
                    // a body ran exactly for the calls that succeeded: a failed call never ran its method
                    assertThat(bodiesRun).containsExactlyInAnyOrderElementsOf(
                            calls.stream().filter(c -> c.failure() == null).map(Call::id).toList());
                    assertThat(verifiedBodies.get()).isPositive();
                    // per phase (acquire, release): wait + (1 + retries) x timeout + retries x delay; 2 s of slack
                    long phaseBound = WAIT.toMillis() + (1 + RETRY_ATTEMPTS) * COMMAND_TIMEOUT.toMillis()
                            + RETRY_ATTEMPTS * RETRY_DELAY.toMillis();
                    assertThat(worstMs).isLessThan(2 * phaseBound + 2_000);
                    assertThat(takenWhileHeld).isTrue();
                    assertThat(events.leaseLost).extracting(e -> e.key()).contains("lock:job:held");
                }
                finally {
                    stopCallers.countDown();
                    heldMayFinish.countDown();
                }
            });
        }
    }

    private static final int UP = 0;
    /** SIGTERM sent, process not yet gone: the old server may still grant locks, which the restart wipes. */
    private static final int STOPPING = 1;
    private static final int DOWN = 2;
    private static final int RESTARTING = 3;

    private static long successes(Queue<Call> calls, long after) {
        return calls.stream().filter(c -> c.start() > after && c.failure() == null).count();
    }

    /** One call of the locked method as its caller saw it. */
    record Call(long id, int generation, long start, long end, Throwable failure) {

        long millis() {
            return (end - start) / 1_000_000;
        }
    }

    /**
     * The locked method; its body checks, against Redis itself, that the lock is really there. The check is conclusive
     * only when the lock and the answer can only have come from one server process whose lock cannot have lapsed yet:
     * <ul>
     * <li>no stop began between the call's start and the answer, and the call did not start while a stop was under
     * way (the old server serves until it handles its SIGTERM, so it may grant a lock that the restart then wipes
     * before the check reads the new, empty server: a lost lock, which distlock reports, not a body run without one);
     * <li>the answer came within one watchdog timeout of the call's start, the lease Redis gave the lock when it
     * granted it: a slower answer means the JVM or Redis stalled, long enough for the lease to run out before the
     * watchdog could renew it (again a lost lock, reported as such).
     * </ul>
     */
    static class Worker {

        private final RedisInspector redisView;
        private final AtomicInteger generation;
        private final AtomicInteger phase;
        private final Set<Long> bodiesRun;
        private final Queue<String> violations;
        private final AtomicLong verified;
        private final Map<String, Long> unverified;

        Worker(RedisInspector redisView, AtomicInteger generation, AtomicInteger phase, Set<Long> bodiesRun,
                Queue<String> violations, AtomicLong verified, Map<String, Long> unverified) {
            this.redisView = redisView;
            this.generation = generation;
            this.phase = phase;
            this.bodiesRun = bodiesRun;
            this.violations = violations;
            this.verified = verified;
            this.unverified = unverified;
        }

        @DistributedLock(key = "#job", waitTime = 200, leaseTime = DistributedLock.WATCHDOG)
        public void work(String job, long callId, int generationAtCall, int phaseAtCall, long calledAt) {
            bodiesRun.add(callId);
            // begun after the server process was gone and running before it was started again: no lock can exist
            if (phaseAtCall == DOWN && phase.get() == DOWN) {
                violations.add("call " + callId + " ran " + job + " while Redis was down");
                return;
            }
            boolean exists;
            try {
                exists = redisView.exists("lock:" + job);
            }
            catch (RuntimeException ex) {
                // Redis went down under the check itself: nothing to conclude, and not the locked code's failure
                unverified.merge("check failed", 1L, Long::sum);
                return;
            }
            long answeredAfterMs = (System.nanoTime() - calledAt) / 1_000_000;
            if (phaseAtCall == STOPPING || generation.get() != generationAtCall) {
                unverified.merge("a stop under way or begun since the call", 1L, Long::sum);
                return;
            }
            if (answeredAfterMs >= WATCHDOG.toMillis()) {
                unverified.merge("answered after a watchdog timeout", 1L, Long::sum);
                return;
            }
            verified.incrementAndGet();
            if (!exists) {
                violations.add("call " + callId + " ran " + job + " but Redis holds no such lock (call began in phase "
                        + phaseAtCall + ", generation " + generationAtCall + "; answered " + answeredAfterMs
                        + " ms after the call began)");
            }
        }
    }
}

package io.github.distlock.reliability;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.IntStream;

import ch.qos.logback.classic.Level;
import io.github.distlock.LockEvent;
import io.github.distlock.LockListener;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.redisson.autoconfigure.RedissonConfigCustomizer;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.api.RedissonClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Fault 6: many locks at once, through distlock's own path. 10,000 watchdog locks are held by 200 concurrent calls of
 * {@link LockTemplate} (each holding 50 keys through nested calls, as a request that locks many items does) in the
 * application distlock auto-configures. The lease monitor must keep up for three watchdog timeouts: every third of
 * the timeout it renews every held watchdog lock, in chunks, with a script that asks for the owner field
 * ({@code HGET}) before the {@code PEXPIRE}, and reports a lock it finds gone, or cannot confirm for a whole timeout,
 * as lost. Then a key deleted under its holder must still be reported, and at release every lock must be gone, with
 * no renewal and no check left.
 * Measures the traffic Redis sees, the client's CPU and what the holder's heap pays.
 */
class ManyLocksTest {

    /**
     * 6 s by default, as when Redisson renewed these locks and the monitor checked them apart (one {@code HEXISTS} per
     * lock): with a 3 s timeout, 2,000 to 10,000 locks lost locks while being acquired in about half the runs on the
     * loaded 2-core build machine. {@code -DmanyLocks.watchdogSeconds=3} runs the harder setting.
     */
    private static final Duration WATCHDOG = Duration.ofSeconds(Long.getLong("manyLocks.watchdogSeconds", 6));
    private static final int BATCH = 1_000;
    /** Concurrent calls, each a thread as a request is in a servlet container; also the acquisitions in flight. */
    private static final int CALLS = 200;
    /** Keys each call holds at once, through nested calls. */
    private static final int KEYS_PER_CALL = Integer.getInteger("manyLocks.keysPerCall", 50);
    private static final int LOCKS = CALLS * KEYS_PER_CALL;
    private static final LockOptions HOLD = LockOptions.waitFor(Duration.ZERO).withLeaseTime(LockOptions.WATCHDOG);
    /** Held beside the others and deleted under its holder at the end: shows the monitor still notices a loss. */
    private static final String CANARY = "many:canary";
    /** distlock's owner ids start here (LockOwner), far above thread ids. */
    private static final long FIRST_OWNER_ID = 1L << 52;

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    @Test
    void tenThousandWatchdogLocksHeldByConcurrentCallsAreAllRenewedAndConfirmedAndAllGoneAfterRelease() {
        Counts events = new Counts();
        Distlock.app(redis.port(), WATCHDOG)
                .withBean(RedissonConfigCustomizer.class, () -> config -> config.setLockWatchdogBatchSize(BATCH))
                .withBean(LockListener.class, () -> events)
                .run(app -> {
            LockTemplate locks = app.getBean(LockTemplate.class);
            String clientId = app.getBean(RedissonClient.class).getId();
            List<String> keys = IntStream.range(0, LOCKS).mapToObj(i -> "many:" + i).toList();
            List<String> redisKeys = keys.stream().map(locks::fullKey).toList();
            MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
            CountDownLatch allHeld = new CountDownLatch(CALLS + 1);
            CountDownLatch release = new CountDownLatch(1);
            Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
            List<Thread> calls = new ArrayList<>();
            try (RedisInspector redisView = new RedisInspector(redis.port());
                    LogCapture redissonLog = new LogCapture("org.redisson");
                    LogCapture distlockLog = new LogCapture("io.github.distlock")) {
                long heapBefore = usedHeapAfterGc(memory);
                long start = System.nanoTime();
                for (int c = 0; c <= CALLS; c++) {
                    List<String> held = (c < CALLS) ? keys.subList(c * KEYS_PER_CALL, (c + 1) * KEYS_PER_CALL)
                            : List.of(CANARY);
                    Thread call = new Thread(() -> {
                        try {
                            holdNested(locks, held, allHeld, release);
                        }
                        catch (Throwable ex) {
                            failures.add(ex);
                        }
                    }, "call-" + c);
                    call.setDaemon(true);
                    calls.add(call);
                    call.start();
                }
                try {
                    await("all calls holding their locks").atMost(Duration.ofSeconds(60))
                            .until(() -> allHeld.getCount() == 0 || !failures.isEmpty());
                    assertThat(failures).as("calls that failed to lock").isEmpty();
                    long acquireMs = (System.nanoTime() - start) / 1_000_000;
                    long heapHolding = usedHeapAfterGc(memory);

                    // what Redis holds: one field per key, this client's id and an owner of distlock's own (a value
                    // per acquisition, not a thread), hold count 1 (nested calls re-enter in the template, not Redis)
                    List<Map<String, String>> hashes = redisView.hashes(redisKeys);
                    Set<String> owners = new HashSet<>();
                    List<String> notHeldAsExpected = new ArrayList<>();
                    for (int i = 0; i < LOCKS; i++) {
                        Map<String, String> hash = hashes.get(i);
                        String field = (hash.size() == 1) ? hash.keySet().iterator().next() : "";
                        if (field.startsWith(clientId + ":") && "1".equals(hash.get(field))
                                && Long.parseLong(field.substring(clientId.length() + 1)) >= FIRST_OWNER_ID) {
                            owners.add(field);
                        }
                        else {
                            notHeldAsExpected.add(redisKeys.get(i) + "=" + hash);
                        }
                    }
                    System.out.printf("MEASURED many locks (acquired): %d watchdog locks (watchdog timeout %d ms) "
                            + "held by %d concurrent calls (%d nested each) after %d ms; %d distinct distlock owners "
                            + "in Redis; %d keys not held as expected %s; leases reported lost meanwhile: %d %s%n",
                            LOCKS, WATCHDOG.toMillis(), CALLS, KEYS_PER_CALL, acquireMs, owners.size(),
                            notHeldAsExpected.size(), notHeldAsExpected.stream().limit(5).toList(), events.lost.size(),
                            events.lost.stream().limit(5).toList());
                    assertThat(notHeldAsExpected).as("keys not held by one distlock owner with hold count 1").isEmpty();
                    assertThat(owners).as("distinct owners").hasSize(LOCKS);

                    Map<String, Long> before = redisView.commandCalls();
                    long cpuBefore = processCpuNanos();
                    long windowStart = System.nanoTime();
                    Duration window = WATCHDOG.multipliedBy(3);
                    // nothing to wait for but time: renewal and the lease monitor must carry every lock through it
                    await().pollDelay(window).atMost(window.plusSeconds(5)).until(() -> true);
                    Map<String, Long> traffic = RedisInspector.delta(before, redisView.commandCalls());
                    long windowMs = (System.nanoTime() - windowStart) / 1_000_000;
                    long windowCpuMs = (processCpuNanos() - cpuBefore) / 1_000_000;
                    List<Long> ttls = redisView.pttls(redisKeys);
                    long existing = ttls.stream().filter(ttl -> ttl > 0).count();
                    long minTtl = ttls.stream().mapToLong(Long::longValue).min().orElseThrow();
                    long canaryTtl = redisView.pttl(locks.fullKey(CANARY));
                    List<String> lostInWindow = List.copyOf(events.lost);

                    long scripts = RedisInspector.scriptCalls(traffic);
                    long renewed = traffic.getOrDefault("pexpire", 0L);
                    // the lease monitor's renewal script is its check too: per lock, an HGET of the owner field (a
                    // lock found without it is reported lost), then the PEXPIRE
                    long monitorChecks = traffic.getOrDefault("hget", 0L);
                    System.out.printf("MEASURED many locks (held): after %d ms (%.1f x watchdog timeout %d ms) %d of "
                            + "%d exist with a TTL, lowest PTTL %d ms; in that window: %d renewal scripts (%.1f/s, %d "
                            + "PEXPIRE = %.1f per lock per timeout), %d lease-monitor HGET (%.1f per lock per "
                            + "timeout, %.0f/s), client CPU %d ms (%.0f%% of one core); all commands %s; leases "
                            + "reported lost: %s; client heap +%d KB holding (%d bytes per held lock, the calls' own "
                            + "objects included)%n",
                            windowMs, windowMs / (double) WATCHDOG.toMillis(), WATCHDOG.toMillis(), existing, LOCKS,
                            minTtl, scripts, scripts * 1000.0 / windowMs, renewed,
                            renewed * (double) WATCHDOG.toMillis() / windowMs / LOCKS, monitorChecks,
                            monitorChecks * (double) WATCHDOG.toMillis() / windowMs / LOCKS,
                            monitorChecks * 1000.0 / windowMs, windowCpuMs, windowCpuMs * 100.0 / windowMs, traffic,
                            lostInWindow, (heapHolding - heapBefore) / 1024, (heapHolding - heapBefore) / LOCKS);

                    assertThat(existing).as("locks still in Redis with a TTL after 3 watchdog timeouts")
                            .isEqualTo(LOCKS);
                    assertThat(minTtl).isPositive();
                    assertThat(canaryTtl).as("canary's PTTL").isPositive();
                    assertThat(lostInWindow).as("leases reported lost while all were held").isEmpty();
                    // a lock that outlived three timeouts was renewed at least twice in them (boundaries aside);
                    // and the monitor reports any lock it could not confirm for a whole timeout, so as none was
                    // reported, each was confirmed at least about as often (it aims at three times per timeout)
                    assertThat(renewed).as("PEXPIREs by renewal").isGreaterThanOrEqualTo(2L * LOCKS);
                    assertThat(monitorChecks).as("lease-monitor HGET").isGreaterThanOrEqualTo(2L * LOCKS);

                    // the monitor still works under this load: a key deleted under its holder is reported
                    long canaryDeleted = System.nanoTime();
                    assertThat(redisView.sync().del(locks.fullKey(CANARY))).isOne();
                    await("the canary's loss reported").atMost(WATCHDOG.plusSeconds(5)).until(() ->
                            !events.lost.isEmpty());
                    long canaryReportedMs = (System.nanoTime() - canaryDeleted) / 1_000_000;

                    long releaseStart = System.nanoTime();
                    release.countDown();
                    for (Thread call : calls) {
                        call.join(60_000);
                    }
                    long releaseMs = (System.nanoTime() - releaseStart) / 1_000_000;
                    long heapReleased = usedHeapAfterGc(memory);
                    long keysLeft = redisView.pttls(redisKeys).stream().filter(ttl -> ttl != -2).count();

                    // after release: nothing renewed and nothing checked for a whole watchdog timeout
                    Map<String, Long> afterRelease = redisView.commandCalls();
                    await().pollDelay(WATCHDOG).atMost(WATCHDOG.plusSeconds(5)).until(() -> true);
                    Map<String, Long> lateTraffic = RedisInspector.delta(afterRelease, redisView.commandCalls());

                    System.out.printf("MEASURED many locks (released): canary deleted under its holder reported lost "
                            + "after %d ms; %d locks released in %d ms, %d keys left; client heap +%d KB after "
                            + "release; traffic in the %d ms after release: %s; leases reported lost: %s; events: %d "
                            + "acquired, %d released, %d release failed; Redisson warnings/errors: %d; distlock "
                            + "warnings: %s%n",
                            canaryReportedMs, LOCKS, releaseMs, keysLeft, (heapReleased - heapBefore) / 1024,
                            WATCHDOG.toMillis(), lateTraffic, events.lost, events.acquired.sum(),
                            events.released.sum(), events.releaseFailed.sum(), redissonLog.problems().size(),
                            distlockLog.messages(Level.WARN).stream().map(m -> m.substring(0, Math.min(90, m.length())))
                                    .toList());

                    assertThat(events.lost).containsExactly(locks.fullKey(CANARY));
                    assertThat(failures).as("calls that failed").isEmpty();
                    assertThat(calls).noneMatch(Thread::isAlive);
                    assertThat(events.acquired.sum()).isEqualTo(LOCKS + 1);
                    assertThat(events.released.sum()).as("released as this owner's").isEqualTo(LOCKS);
                    assertThat(events.releaseFailed.sum()).isZero();
                    assertThat(keysLeft).as("lock keys left right after release").isZero();
                    assertThat(RedisInspector.scriptCalls(lateTraffic)).as("renewals after release").isZero();
                    assertThat(lateTraffic.getOrDefault("hget", 0L)).as("lease checks after release").isZero();
                }
                finally {
                    // the calls end (and release) before the application and its Redisson client close
                    release.countDown();
                    for (Thread call : calls) {
                        call.join(60_000);
                    }
                }
            }
        });
    }

    /** Holds the first key and, inside it, the rest: one call holding all of {@code keys} until {@code release}. */
    private static void holdNested(LockTemplate locks, List<String> keys, CountDownLatch allHeld, CountDownLatch release) {
        if (keys.isEmpty()) {
            allHeld.countDown();
            Latches.await(release);
            return;
        }
        locks.run(keys.get(0), HOLD, () -> holdNested(locks, keys.subList(1, keys.size()), allHeld, release));
    }

    /** CPU time of this whole JVM: while the calls only wait, that is the client's renewal and lease checks. */
    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    private static long usedHeapAfterGc(MemoryMXBean memory) {
        // two rounds: the first may only promote what the second frees; an estimate, good to a few hundred KB
        memory.gc();
        memory.gc();
        return memory.getHeapMemoryUsage().getUsed();
    }

    /**
     * Counts events instead of keeping them: a list that copies itself on every add would cost the calls more than
     * the locking does at these numbers.
     */
    static final class Counts implements LockListener {

        final LongAdder acquired = new LongAdder();
        final LongAdder released = new LongAdder();
        final LongAdder releaseFailed = new LongAdder();
        final Queue<String> lost = new ConcurrentLinkedQueue<>();

        @Override
        public void onAcquired(LockEvent event) {
            acquired.increment();
        }

        @Override
        public void onReleased(LockEvent event) {
            released.increment();
        }

        @Override
        public void onLeaseLost(LockEvent event) {
            lost.add(event.key());
        }

        @Override
        public void onReleaseFailed(LockEvent event) {
            releaseFailed.increment();
        }
    }
}

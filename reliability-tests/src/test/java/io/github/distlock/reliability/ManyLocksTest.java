package io.github.distlock.reliability;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import io.github.distlock.autoconfigure.RedissonConfigCustomizer;
import io.github.distlock.testsupport.RedisServerExtension;
import io.lettuce.core.ScanArgs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.api.RFuture;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Fault 6: many locks at once. 10,000 watchdog locks held by one application (the Redisson client distlock builds) must
 * all be renewed for several watchdog timeouts, and all be gone, with no renewal left, once released. Measures the
 * renewal traffic Redis sees and what the holder's heap pays per lock.
 */
class ManyLocksTest {

    /**
     * Redisson renews a client's watchdog locks in one pass of sequential scripts, {@link #BATCH} locks each, and starts
     * the next pass a third of the timeout after the last one ends: a lock survives only while a pass takes less than
     * two thirds of the timeout. With the default batch of 100 and 1-3 s timeouts, 10,000 locks need 100 sequential
     * round trips per pass, which a loaded 2-core machine did not manage (see docs/reliability.md): 3 s with batches
     * of 1,000 (10 scripts per pass) holds with room to spare.
     */
    private static final Duration WATCHDOG = Duration.ofSeconds(3);
    private static final int BATCH = 1_000;
    /** Acquisitions in flight at once: 10,000 at once would starve the renewal scripts of the first ones. */
    private static final int IN_FLIGHT = 500;
    private static final int LOCKS = 10_000;

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    @Test
    void tenThousandWatchdogLocksAreAllRenewedAndAllGoneAfterRelease() {
        Distlock.app(redis.port(), WATCHDOG)
                .withBean(RedissonConfigCustomizer.class, () -> config -> config.setLockWatchdogBatchSize(BATCH))
                .run(app -> {
            RedissonClient redisson = app.getBean(RedissonClient.class);
            List<String> keys = IntStream.range(0, LOCKS).mapToObj(i -> "lock:many:" + i).toList();
            // Redisson names the owner <client id>:<thread id>; one owner id for all, as one thread holding many keys
            long owner = Thread.currentThread().getId();
            MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
            try (RedisInspector redisView = new RedisInspector(redis.port());
                    LogCapture redissonLog = new LogCapture("org.redisson")) {
                long heapBefore = usedHeapAfterGc(memory);
                long start = System.nanoTime();
                List<RFuture<Boolean>> acquisitions = new ArrayList<>(LOCKS);
                Semaphore inFlight = new Semaphore(IN_FLIGHT);
                for (String key : keys) {
                    inFlight.acquire();
                    // async so that 10,000 acquisitions take a second, not ten; -1 = watchdog, as distlock asks
                    RFuture<Boolean> acquisition = redisson.getLock(key).tryLockAsync(0, -1, TimeUnit.MILLISECONDS, owner);
                    acquisition.whenComplete((ok, failure) -> inFlight.release());
                    acquisitions.add(acquisition);
                }
                CompletableFuture.allOf(acquisitions.stream().map(RFuture::toCompletableFuture)
                        .toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
                long acquireMs = (System.nanoTime() - start) / 1_000_000;
                assertThat(acquisitions).allSatisfy(f -> assertThat(f.toCompletableFuture().join()).isTrue());
                long heapHolding = usedHeapAfterGc(memory);

                Map<String, Long> before = redisView.commandCalls();
                long windowStart = System.nanoTime();
                Duration window = WATCHDOG.multipliedBy(3);
                // nothing to wait for but time: the watchdog must carry every lock through it
                await().pollDelay(window).atMost(window.plusSeconds(5)).until(() -> true);
                long existing = countExisting(redisView, keys);
                long minTtl = keys.stream().limit(200).mapToLong(redisView::pttl).min().orElseThrow();
                long windowMs = (System.nanoTime() - windowStart) / 1_000_000;
                Map<String, Long> renewal = RedisInspector.delta(before, redisView.commandCalls());

                System.out.printf("MEASURED many locks (holding): %d of %d exist after %d ms; renewal traffic %s%n",
                        existing, LOCKS, windowMs, renewal);
                long releaseStart = System.nanoTime();
                AtomicInteger lostOnRelease = new AtomicInteger();
                List<CompletableFuture<Void>> releases = new ArrayList<>(LOCKS);
                Semaphore releasing = new Semaphore(IN_FLIGHT);
                Map<String, Integer> releaseFailures = new ConcurrentHashMap<>();
                for (String key : keys) {
                    releasing.acquire();
                    RLock lock = redisson.getLock(key);
                    // a lock the watchdog failed to keep would fail here; count those rather than stop at the first
                    releases.add(lock.unlockAsync(owner).toCompletableFuture().handle((ok, failure) -> {
                        releasing.release();
                        if (failure != null) {
                            lostOnRelease.incrementAndGet();
                            String reason = String.valueOf(failure);
                            releaseFailures.merge(reason.substring(0, Math.min(120, reason.length())), 1, Integer::sum);
                        }
                        return null;
                    }));
                }
                CompletableFuture.allOf(releases.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
                long releaseMs = (System.nanoTime() - releaseStart) / 1_000_000;
                long heapReleased = usedHeapAfterGc(memory);

                long keysLeft = countExisting(redisView, keys);
                // Redisson's unlock also leaves short-lived redisson_unlock_latch:{key}:* keys, deleted shortly after
                System.out.printf("MEASURED many locks (released): %d lock keys left, %d keys in Redis (e.g. %s), "
                        + "release failures %s%n", keysLeft, redisView.dbSize(),
                        redisView.sync().scan(ScanArgs.Builder.limit(3)).getKeys(), releaseFailures);
                // after release: nothing renewed for a whole watchdog timeout (three renewal intervals)
                Map<String, Long> afterRelease = redisView.commandCalls();
                await().pollDelay(WATCHDOG).atMost(WATCHDOG.plusSeconds(5)).until(() -> true);
                Map<String, Long> lateTraffic = RedisInspector.delta(afterRelease, redisView.commandCalls());

                long scripts = RedisInspector.scriptCalls(renewal);
                System.out.printf("MEASURED many locks: %d watchdog locks acquired in %d ms, released in %d ms; after "
                        + "%d ms (%.1f x watchdog timeout %d ms) %d still exist, lowest PTTL of 200 sampled %d ms; "
                        + "renewal traffic in that window: %s = %d script calls (%.0f/s, %d keys per call); "
                        + "client heap: +%d KB holding (%d bytes/lock), +%d KB after release; "
                        + "traffic in %d ms after release: %s; Redisson warnings/errors: %d%n",
                        LOCKS, acquireMs, releaseMs, windowMs, windowMs / (double) WATCHDOG.toMillis(),
                        WATCHDOG.toMillis(), existing, minTtl, renewal, scripts, scripts * 1000.0 / windowMs,
                        (scripts > 0) ? renewal.getOrDefault("pexpire", 0L) / scripts : 0,
                        (heapHolding - heapBefore) / 1024, (heapHolding - heapBefore) / LOCKS,
                        (heapReleased - heapBefore) / 1024, WATCHDOG.toMillis(), lateTraffic, redissonLog.problems().size());

                assertThat(existing).isEqualTo(LOCKS);
                assertThat(minTtl).isPositive();
                assertThat(lostOnRelease.get()).as("locks found lost on release").isZero();
                assertThat(keysLeft).as("keys left right after release").isZero();
                assertThat(scripts).as("renewal scripts ran").isPositive();
                assertThat(RedisInspector.scriptCalls(lateTraffic)).as("renewals after release").isZero();
                assertThat(countExisting(redisView, keys)).isZero();
            }
        });
    }

    /** EXISTS on many keys at once; touching a key also expires it if its time is up, so the count is exact. */
    private static long countExisting(RedisInspector redisView, List<String> keys) {
        long existing = 0;
        for (int i = 0; i < keys.size(); i += 1_000) {
            existing += redisView.sync().exists(keys.subList(i, Math.min(i + 1_000, keys.size())).toArray(String[]::new));
        }
        return existing;
    }

    private static long usedHeapAfterGc(MemoryMXBean memory) {
        // two rounds: the first may only promote what the second frees; an estimate, good to a few hundred KB
        memory.gc();
        memory.gc();
        return memory.getHeapMemoryUsage().getUsed();
    }
}

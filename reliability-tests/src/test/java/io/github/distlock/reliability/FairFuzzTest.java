package io.github.distlock.reliability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import io.github.distlock.LockType;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link LockType#FAIR} under a fuzz: {@value #WORKERS} worker JVMs ({@link FairFuzzWorkerMain}), each with
 * {@code distlock.fuzz.threads} threads, run {@code distlock.fuzz.cycles} (default {@value #DEFAULT_CYCLES}) contended cycles in
 * total on {@code distlock.fuzz.keys} keys: a non-atomic read-modify-write of a per-key counter in Redis plus an "inside" marker.
 * The lock must let no two cycles of one key overlap (0 overlaps) and lose no update (each counter equals the cycles
 * run on its key).
 *
 * <p>The same workers first run a short control without the lock, which must show overlaps and lost updates: proof,
 * in every run, that the checks see what they are there to see.
 *
 * <p>The default keeps the build's time: about 10 s of contended cycles, three JVMs and every key busy. A change to the
 * FAIR scripts or the hand-off deserves the long run, {@code -Ddistlock.fuzz.cycles=100000} (about 90 s).
 */
class FairFuzzTest {

    private static final int WORKERS = 3;
    private static final int THREADS = Integer.getInteger("distlock.fuzz.threads", 4);
    private static final int KEYS = Integer.getInteger("distlock.fuzz.keys", 4);
    private static final int DEFAULT_CYCLES = 10_000;
    private static final int CONTROL_CYCLES_PER_THREAD = 150;

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    /** One phase of one worker, as it reported it. */
    record Phase(String prefix, long[] perKey, long overlaps, long millis, int failures) {

        static Phase parse(String line) {
            String[] parts = line.split(" ");
            return new Phase(parts[0], Arrays.stream(parts[1].split(",")).mapToLong(Long::parseLong).toArray(),
                    Long.parseLong(parts[2]), Long.parseLong(parts[3]), Integer.parseInt(parts[4]));
        }

        long cycles() {
            return Arrays.stream(perKey).sum();
        }
    }

    @Test
    void fairLockLetsNoTwoCyclesOfAKeyOverlapAndLosesNoUpdateAcrossThreeJvms() throws Exception {
        int total = Integer.getInteger("distlock.fuzz.cycles", DEFAULT_CYCLES);
        int perThread = (total + WORKERS * THREADS - 1) / (WORKERS * THREADS);
        List<HolderProcess> workers = new ArrayList<>();
        try (RedisInspector redisView = new RedisInspector(redis.port())) {
            long startedAt = System.nanoTime();
            for (int w = 0; w < WORKERS; w++) {
                workers.add(HolderProcess.start(List.of(System.getProperty("distlock.fuzz.jvm", "-XX:TieredStopAtLevel=1")),
                        FairFuzzWorkerMain.class, Integer.toString(redis.port()), "w" + w, Integer.toString(KEYS),
                        Integer.toString(THREADS), Integer.toString(perThread),
                        Integer.toString(CONTROL_CYCLES_PER_THREAD)));
            }
            for (HolderProcess worker : workers) {
                worker.awaitLine("READY", Duration.ofSeconds(90));
            }
            long readyAt = System.nanoTime();
            // all at once, so that the keys are contended across the JVMs from the first cycle
            workers.forEach(worker -> worker.send("GO"));
            List<Phase> control = new ArrayList<>();
            List<Phase> locked = new ArrayList<>();
            for (HolderProcess worker : workers) {
                control.add(Phase.parse(worker.awaitLine("DONE", Duration.ofSeconds(60))));
            }
            java.util.Map<String, Long> callsBefore = redisView.commandCalls();
            for (HolderProcess worker : workers) {
                locked.add(Phase.parse(worker.awaitLine("DONE", Duration.ofSeconds(180))));
            }
            long doneAt = System.nanoTime();
            java.util.Map<String, Long> commands = RedisInspector.delta(callsBefore, redisView.commandCalls());
            for (HolderProcess worker : workers) {
                assertThat(worker.awaitExit(Duration.ofSeconds(30))).as("worker exit code").isZero();
            }

            long controlLost = lostUpdates(redisView, "fuzzctl:", control);
            long controlOverlaps = parseLong(redisView.sync().get("fuzzctl:overlaps"));
            long lockedLost = lostUpdates(redisView, "fuzz:", locked);
            long lockedOverlaps = parseLong(redisView.sync().get("fuzz:overlaps"));
            long cycles = locked.stream().mapToLong(Phase::cycles).sum();
            long lockedMs = locked.stream().mapToLong(Phase::millis).max().orElseThrow();
            System.out.printf("MEASURED fair fuzz: %d JVMs x %d threads on %d keys: %d locked FAIR cycles in %d ms "
                    + "(%d cycles/s), %d overlaps, %d lost updates, per key %s; control without a lock: %d cycles, %d "
                    + "overlaps, %d lost updates; JVM start %d ms, whole run %d ms; Redis commands in the locked phase (control's end included) %s%n", WORKERS, THREADS, KEYS, cycles,
                    lockedMs, cycles * 1000 / Math.max(1, lockedMs), lockedOverlaps, lockedLost,
                    Arrays.toString(perKey(locked)), control.stream().mapToLong(Phase::cycles).sum(), controlOverlaps,
                    controlLost, (readyAt - startedAt) / 1_000_000, (doneAt - startedAt) / 1_000_000, commands);

            assertThat(locked).allSatisfy(phase -> assertThat(phase.failures()).isZero());
            assertThat(cycles).isGreaterThanOrEqualTo(total);
            assertThat(lockedOverlaps).as("overlaps under the FAIR lock").isZero();
            assertThat(locked).allSatisfy(phase -> assertThat(phase.overlaps()).isZero());
            assertThat(lockedLost).as("lost updates under the FAIR lock").isZero();
            // the checks can fail: without a lock they do
            assertThat(controlOverlaps).as("overlaps seen without a lock").isPositive();
            assertThat(controlLost).as("lost updates without a lock").isPositive();
            // every lock was given back
            assertThat(redisView.sync().keys("lock:fuzz:*")).isEmpty();
        }
        finally {
            for (HolderProcess worker : workers) {
                worker.close();
            }
        }
    }

    private static long[] perKey(List<Phase> phases) {
        long[] sums = new long[KEYS];
        for (Phase phase : phases) {
            for (int k = 0; k < KEYS; k++) {
                sums[k] += phase.perKey()[k];
            }
        }
        return sums;
    }

    /** Cycles run minus the increments that reached each counter, over all keys. */
    private static long lostUpdates(RedisInspector redisView, String prefix, List<Phase> phases) {
        long[] ran = perKey(phases);
        long lost = 0;
        for (int k = 0; k < KEYS; k++) {
            long counted = parseLong(redisView.sync().get(prefix + "count:" + k));
            assertThat(counted).as("counter of key %d (%s) never runs ahead of the cycles", k, prefix)
                    .isLessThanOrEqualTo(ran[k]);
            lost += ran[k] - counted;
        }
        return lost;
    }

    private static long parseLong(String value) {
        return (value == null) ? 0 : Long.parseLong(value);
    }
}

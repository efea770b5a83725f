package io.github.distlock.jdbc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.awaitility.Awaitility.await;

/**
 * A measurement, not run by the build ({@code -Ddistlock.measure=true}): two instances of four threads each on one
 * PostgreSQL key for three seconds; prints how often the instance that released the key took it next, the hand-off
 * latency and the grants per instance.
 */
@EnabledIfSystemProperty(named = "distlock.measure", matches = "true")
class HotKeyTurnsBetweenInstancesMeasurementTest {

    @RegisterExtension
    static final Database db = Database.postgres();

    @Test
    void selfRegrabsHandOffAndGrantsPerInstanceOnAHotKey() throws Exception {
        for (int run = 0; run < Integer.getInteger("distlock.measure.runs", 3); run++) {
            measure("hot-" + run);
        }
    }

    private static void measure(String key) throws Exception {
        List<Integer> grants = Collections.synchronizedList(new ArrayList<>());
        List<Long> handOffs = Collections.synchronizedList(new ArrayList<>());
        long[] releasedAt = {0};
        ExecutorService threads = Executors.newFixedThreadPool(8);
        try (JdbcLockProvider one = new JdbcLockProvider(db.dataSource());
                JdbcLockProvider two = new JdbcLockProvider(db.dataSource())) {
            await().atMost(Duration.ofSeconds(10)).until(() -> one.listener().listening() && two.listener().listening());
            JdbcLockProvider[] providers = {one, two};
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
            List<Future<?>> running = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int instance = t % 2;
                running.add(threads.submit(() -> {
                    while (System.nanoTime() - end < 0) {
                        LockHandle handle = providers[instance].acquire(new LockRequest(key,
                                TimeUnit.SECONDS.toNanos(30), 0, true, LockOwner.next())).get(30, TimeUnit.SECONDS);
                        synchronized (releasedAt) {
                            grants.add(instance);
                            if (releasedAt[0] != 0) {
                                handOffs.add(System.nanoTime() - releasedAt[0]);
                            }
                            releasedAt[0] = System.nanoTime();
                        }
                        handle.releaseAsync().get(30, TimeUnit.SECONDS);
                    }
                    return null;
                }));
            }
            for (Future<?> thread : running) {
                thread.get(60, TimeUnit.SECONDS);
            }
        }
        finally {
            threads.shutdownNow();
        }
        int same = 0;
        for (int i = 1; i < grants.size(); i++) {
            if (grants.get(i).equals(grants.get(i - 1))) {
                same++;
            }
        }
        List<Long> sorted = new ArrayList<>(handOffs);
        Collections.sort(sorted);
        System.out.println("MEASURED grants " + grants.size() + " self-regrabs "
                + String.format("%.1f", 100.0 * same / (grants.size() - 1)) + "% hand-off p50 "
                + sorted.get(sorted.size() / 2) / 1000 + " us p99 " + sorted.get(sorted.size() * 99 / 100) / 1000
                + " us; instance 0: " + grants.stream().filter(g -> g == 0).count() + ", instance 1: "
                + grants.stream().filter(g -> g == 1).count());
    }
}

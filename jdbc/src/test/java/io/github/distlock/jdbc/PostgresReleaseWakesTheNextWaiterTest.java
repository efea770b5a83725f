package io.github.distlock.jdbc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * On PostgreSQL a release hands the key to the next waiter at once: another instance's waiter through
 * {@code LISTEN/NOTIFY}, also after its listening connection was terminated, and this instance's waiters in the order
 * they came. The waiters here poll every 20 s or more, so that only a wake-up can explain a grant within seconds.
 */
class PostgresReleaseWakesTheNextWaiterTest {

    @RegisterExtension
    static final Database db = Database.postgres();

    private static final Duration POLL = Duration.ofSeconds(20);

    private static JdbcLockProvider provider() {
        return new JdbcLockProvider(db.dataSource(), JdbcLockOptions.defaults().withPollIntervals(POLL, POLL));
    }

    private static CompletableFuture<LockHandle> lock(JdbcLockProvider provider, String key) {
        return provider.acquire(new LockRequest(key, TimeUnit.SECONDS.toNanos(60), 0, true, LockOwner.next()));
    }

    @Test
    void aWaiterOnAnotherInstanceIsWokenByTheReleaseLongBeforeItsNextPoll() throws Exception {
        try (JdbcLockProvider holder = provider(); JdbcLockProvider waiter = provider()) {
            handOverBetweenInstances(holder, waiter, "wake-remote");
        }
    }

    @Test
    void theListenerListensAgainAfterItsBackendIsTerminatedAndWakesWaitersStill() throws Exception {
        try (JdbcLockProvider holder = provider(); JdbcLockProvider waiter = provider()) {
            JdbcListener listener = waiter.listener();
            assertThat(listener).isNotNull();
            await().atMost(Duration.ofSeconds(10)).until(listener::listening);
            int terminated = listener.backendPid();
            assertThat(db.query("SELECT pg_terminate_backend(?) AS done", terminated))
                    .containsExactly(java.util.Map.of("done", true));
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> listener.connections() == 2 && listener.listening());
            assertThat(listener.backendPid()).isNotEqualTo(terminated);
            assertThat(db.query("SELECT pid FROM pg_stat_activity WHERE query = ?",
                    "LISTEN " + holder.listener().channelName())).hasSize(2);
            handOverBetweenInstances(holder, waiter, "wake-after-terminate");
        }
    }

    /** {@code holder} holds {@code key}; {@code waiter}'s call waits, and gets the key within 3 s of the release. */
    private static void handOverBetweenInstances(JdbcLockProvider holder, JdbcLockProvider waiter, String key)
            throws Exception {
        await().atMost(Duration.ofSeconds(10)).until(() -> waiter.listener().listening());
        LockHandle held = lock(holder, key).get(10, TimeUnit.SECONDS);
        CompletableFuture<LockHandle> waiting = lock(waiter, key);
        // its failed try told the other instances that it waits: the holder's release notifies
        await().atMost(Duration.ofSeconds(10)).until(() -> holder.waiters().remoteWaiters(key));
        assertThat(waiting).isNotDone();
        long released = System.nanoTime();
        assertThat(held.releaseAsync().get(10, TimeUnit.SECONDS)).isTrue();
        LockHandle handedOver = waiting.get(3, TimeUnit.SECONDS);
        assertThat(Duration.ofNanos(System.nanoTime() - released)).isLessThan(POLL.dividedBy(4));
        assertThat(db.lockRow(key).get("owner")).isEqualTo(waiter.instanceId() + ":" + ownerId(handedOver));
        assertThat(handedOver.releaseAsync().get(10, TimeUnit.SECONDS)).isTrue();
    }

    private static String ownerId(LockHandle handle) {
        String owner = ((JdbcLockHandle) handle).owner;
        return owner.substring(owner.lastIndexOf(':') + 1);
    }

    @Test
    void waitersOfOneInstanceGetTheKeyInTheOrderTheyCameAndALaterCallQueuesBehindThem() throws Exception {
        try (JdbcLockProvider provider = provider()) {
            String key = "local-line";
            LockHandle first = lock(provider, key).get(10, TimeUnit.SECONDS);
            List<CompletableFuture<LockHandle>> waiting = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                waiting.add(lock(provider, key));
            }
            assertThat(provider.waiters().waiting(key)).isEqualTo(3);
            List<Integer> served = new CopyOnWriteArrayList<>();
            for (int i = 0; i < waiting.size(); i++) {
                int index = i;
                waiting.get(i).thenRun(() -> served.add(index));
            }
            first.releaseAsync().get(10, TimeUnit.SECONDS);
            LockHandle second = waiting.get(0).get(3, TimeUnit.SECONDS);
            // the releasing caller asks again at once: it queues behind the two still waiting
            waiting.add(lock(provider, key));
            waiting.get(3).thenRun(() -> served.add(3));
            assertThat(provider.waiters().waiting(key)).isEqualTo(3);
            second.releaseAsync().get(10, TimeUnit.SECONDS);
            waiting.get(1).get(3, TimeUnit.SECONDS).releaseAsync().get(10, TimeUnit.SECONDS);
            waiting.get(2).get(3, TimeUnit.SECONDS).releaseAsync().get(10, TimeUnit.SECONDS);
            waiting.get(3).get(3, TimeUnit.SECONDS).releaseAsync().get(10, TimeUnit.SECONDS);
            assertThat(served).containsExactly(0, 1, 2, 3);
            assertThat(provider.waiters().waiting(key)).isZero();
        }
    }

    @Test
    void twoInstancesLockingOneHotKeyNeverHoldItTogether() throws Exception {
        String key = "hot";
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        int[] perInstance = new int[2];
        ExecutorService threads = Executors.newFixedThreadPool(8);
        try (JdbcLockProvider one = new JdbcLockProvider(db.dataSource());
                JdbcLockProvider two = new JdbcLockProvider(db.dataSource())) {
            JdbcLockProvider[] providers = {one, two};
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1000);
            List<Future<?>> running = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int instance = t % 2;
                running.add(threads.submit(() -> {
                    while (System.nanoTime() - end < 0) {
                        LockHandle handle = lock(providers[instance], key).get(30, TimeUnit.SECONDS);
                        if (inside.incrementAndGet() != 1) {
                            overlaps.incrementAndGet();
                        }
                        synchronized (perInstance) {
                            perInstance[instance]++;
                        }
                        inside.decrementAndGet();
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
        assertThat(overlaps).hasValue(0);
        assertThat(perInstance[0]).isPositive();
        assertThat(perInstance[1]).isPositive();
        assertThat(db.lockRow(key).get("owner")).isNull();
    }
}

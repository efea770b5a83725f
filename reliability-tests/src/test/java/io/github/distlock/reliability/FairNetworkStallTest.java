package io.github.distlock.reliability;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import io.github.distlock.LockContext;
import io.github.distlock.LockListener;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import io.github.distlock.testsupport.RedisServerExtension;
import io.github.distlock.testsupport.TcpProxy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@link LockType#FAIR}, network stall: the holder's client talks to Redis through a {@link TcpProxy} that stops
 * forwarding while a waiter of another client is queued behind it; the stall ends with its connections reset. The
 * holder must be told of the loss while it still runs (lease monitor), the waiter must get the lock only once the
 * holder's lease has run out in Redis (PTTL read at the start of the stall), and the fenced writes of both into
 * {@link FencedStorage} show there were never two holders: the stale holder's later write carries the lower token and
 * is refused.
 */
class FairNetworkStallTest {

    private static final Duration WATCHDOG = Duration.ofSeconds(1);
    private static final String KEY = "fair:stall";
    private static final String FULL_KEY = "lock:" + KEY;

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    @Test
    void stalledHolderIsToldOfTheLossAndTheQueuedWaiterGetsTheLockOnlyAfterTheLeaseRanOutFencedWritesProveIt()
            throws Exception {
        FencedStorage storage = new FencedStorage(true);
        RecordingListener events = new RecordingListener();
        try (TcpProxy proxy = TcpProxy.start(redis.port()); RedisInspector redisView = new RedisInspector(redis.port())) {
            Distlock.app(proxy.port(), WATCHDOG).withBean(LockListener.class, () -> events).run(holderApp ->
                    Distlock.app(redis.port(), WATCHDOG).run(waiterApp -> {
                LockTemplate holder = holderApp.getBean(LockTemplate.class);
                LockTemplate waiter = waiterApp.getBean(LockTemplate.class);
                CountDownLatch holding = new CountDownLatch(1);
                CountDownLatch mayWrite = new CountDownLatch(1);
                AtomicLong holderToken = new AtomicLong();
                CompletableFuture<Boolean> holderCall = CompletableFuture.supplyAsync(() -> holder.execute(KEY,
                        FairWaiters.fair(Duration.ZERO).withFencing(), () -> {
                            long token = LockContext.fencingToken().orElseThrow();
                            holderToken.set(token);
                            holding.countDown();
                            // the work during which the holder is cut off from Redis
                            Latches.await(mayWrite);
                            return storage.write("item", token, "written by the stale holder");
                        }));
                Latches.await(holding);
                String holderField = redisView.hash(FULL_KEY).keySet().iterator().next();

                AtomicLong waiterInAt = new AtomicLong();
                AtomicLong waiterToken = new AtomicLong();
                AtomicReference<Map<String, String>> waiterSaw = new AtomicReference<>();
                AtomicReference<Thread> waiterThread = new AtomicReference<>();
                long scripts = RedisInspector.scriptCalls(redisView.commandCalls());
                CompletableFuture<Boolean> waiterCall = CompletableFuture.supplyAsync(() -> {
                    waiterThread.set(Thread.currentThread());
                    return waiter.execute(KEY, FairWaiters.fair(Duration.ofSeconds(15)).withFencing(), () -> {
                        waiterInAt.set(System.nanoTime());
                        long token = LockContext.fencingToken().orElseThrow();
                        waiterToken.set(token);
                        waiterSaw.set(redisView.hash(FULL_KEY));
                        return storage.write("item", token, "written by the new holder");
                    });
                });
                await().until(() -> waiterThread.get() != null);
                FairWaiters.awaitQueued(waiterThread.get(), redisView, scripts);

                proxy.pause();
                long askedAt = System.nanoTime();
                long pttlAtStall = redisView.pttl(FULL_KEY);
                // a renewal already on its way can only make the lease end later than this
                long expiresNoSoonerThan = askedAt + pttlAtStall * 1_000_000;

                await().atMost(WATCHDOG.multipliedBy(4)).until(() -> events.leaseLost.size() == 1);
                long toldAfterMs = (System.nanoTime() - askedAt) / 1_000_000;
                assertThat(holderCall).as("the holder is told while it still runs").isNotDone();
                assertThat(waiterCall.get(15, TimeUnit.SECONDS)).as("the new holder's write").isTrue();

                // the stall ends as a reset would end it; the stale holder, back, writes with its old token
                proxy.dropConnections();
                proxy.resume();
                mayWrite.countDown();
                boolean staleAccepted = holderCall.get(30, TimeUnit.SECONDS);

                long waiterAfterExpiryMs = (waiterInAt.get() - expiresNoSoonerThan) / 1_000_000;
                System.out.printf("MEASURED fair stall: PTTL at the stall %d ms (watchdog %d ms); holder told of the "
                        + "loss %d ms into the stall; queued waiter got the lock %d ms after that PTTL ran out; tokens "
                        + "stale %d, new %d; storage log %s%n", pttlAtStall, WATCHDOG.toMillis(), toldAfterMs,
                        waiterAfterExpiryMs, holderToken.get(), waiterToken.get(), storage.log());
                assertThat(pttlAtStall).isBetween(1L, WATCHDOG.toMillis());
                assertThat(waiterAfterExpiryMs).as("the waiter's grant, after the stalled holder's lease ran out")
                        .isGreaterThanOrEqualTo(-2).isLessThan(WATCHDOG.multipliedBy(2).toMillis());
                assertThat(waiterSaw.get()).hasSize(1).doesNotContainKey(holderField);
                assertThat(waiterToken.get()).isGreaterThan(holderToken.get());
                assertThat(staleAccepted).as("the stale holder's write is refused").isFalse();
                assertThat(storage.read("item")).isEqualTo("written by the new holder");
                assertThat(storage.log()).filteredOn(FencedStorage.Write::accepted).extracting(FencedStorage.Write::token)
                        .containsExactly(waiterToken.get());
                assertThat(events.leaseLost).extracting(e -> e.key()).containsExactly(FULL_KEY);
                // its release is owner-checked: the lock it let go of was no longer its own, so no clean release
                assertThat(events.released).as("releases reported by the stale holder").isEmpty();
                await().atMost(Duration.ofSeconds(5)).until(() -> !redisView.exists(FULL_KEY));
            }));
        }
    }
}

package io.github.distlock.reliability;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import ch.qos.logback.classic.Level;
import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.DistributedLock;
import io.github.distlock.LockContext;
import io.github.distlock.LockListener;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.testsupport.RedisServerExtension;
import io.github.distlock.testsupport.TcpProxy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Faults 4 and 5: the holder's traffic to Redis stalls (a paused TCP proxy: connections stay open, nothing gets
 * through) for longer than the watchdog timeout. Its lock expires in Redis and a second application, connected
 * directly, takes it while the first still runs its guarded code: the known limit of every lease-based lock. The tests
 * show what the starter does about it: the stale holder's release reports the loss (listener + WARN) instead of
 * pretending, it does not delete the new holder's lock, and with a fenced lock, storage that checks the token refuses
 * the stale holder's write.
 */
class NetworkStallTest {

    private static final Duration WATCHDOG = Duration.ofSeconds(1);

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    @Test
    void holderCutOffLongerThanTheWatchdogTimeoutLosesTheLockAndItsReleaseSaysSo() throws Exception {
        RecordingListener events = new RecordingListener();
        try (TcpProxy proxy = TcpProxy.start(redis.port());
                RedisInspector redisView = new RedisInspector(redis.port());
                LogCapture templateLog = new LogCapture(DefaultLockTemplate.class);
                LogCapture redissonLog = new LogCapture("org.redisson")) {
            Distlock.app(proxy.port(), WATCHDOG).withBean(LockListener.class, () -> events).run(holderApp -> {
                Distlock.app(redis.port(), WATCHDOG).run(contenderApp -> {
                    LockTemplate holder = holderApp.getBean(LockTemplate.class);
                    LockTemplate contender = contenderApp.getBean(LockTemplate.class);
                    CountDownLatch holderIn = new CountDownLatch(1);
                    CountDownLatch holderMayFinish = new CountDownLatch(1);
                    CountDownLatch contenderIn = new CountDownLatch(1);
                    CountDownLatch contenderMayFinish = new CountDownLatch(1);

                    CompletableFuture<Void> holderCall = CompletableFuture.runAsync(() -> holder.run("stall",
                            LockOptions.waitFor(Duration.ZERO).withLeaseTime(LockOptions.WATCHDOG), () -> {
                                holderIn.countDown();
                                Latches.await(holderMayFinish);
                            }));
                    Latches.await(holderIn);
                    assertThat(proxy.connectionCount()).isPositive();
                    proxy.pause();
                    long pausedAt = System.nanoTime();

                    CompletableFuture<Boolean> contenderCall = CompletableFuture.supplyAsync(() -> {
                        AtomicLong attempts = new AtomicLong();
                        await().atMost(WATCHDOG.plusSeconds(3)).pollInterval(Duration.ofMillis(20)).until(() -> {
                            attempts.incrementAndGet();
                            return contender.tryRun("stall", LockOptions.waitFor(Duration.ZERO), () -> {
                                contenderIn.countDown();
                                Latches.await(contenderMayFinish);
                            });
                        });
                        return true;
                    });
                    Latches.await(contenderIn);
                    long contenderInAfterMs = (System.nanoTime() - pausedAt) / 1_000_000;
                    String owner = redisView.hash("lock:stall").keySet().iterator().next();

                    // the holder learns of the loss while it still runs and is still cut off, not only at release
                    await().atMost(WATCHDOG.multipliedBy(3)).until(() -> events.leaseLost.size() == 1);
                    long lossReportedAfterMs = (System.nanoTime() - pausedAt) / 1_000_000;
                    assertThat(holderCall).isNotDone();
                    assertThat(templateLog.messages(Level.WARN))
                            .anySatisfy(message -> assertThat(message).contains("lock:stall").contains("lost while its holder still runs"));

                    proxy.resume();
                    long resumedAt = System.nanoTime();
                    holderMayFinish.countDown();
                    holderCall.get(30, TimeUnit.SECONDS);
                    long releaseMs = (System.nanoTime() - resumedAt) / 1_000_000;

                    assertThat(events.leaseLost).as("the lost lease, reported once").hasSize(1);
                    assertThat(events.released).isEmpty();
                    assertThat(templateLog.messages(Level.WARN))
                            .anySatisfy(message -> assertThat(message).contains("lock:stall").contains("lost"));
                    // the stale holder's release must not have deleted the new holder's lock
                    assertThat(redisView.hash("lock:stall")).containsOnlyKeys(owner);

                    contenderMayFinish.countDown();
                    assertThat(contenderCall.get(30, TimeUnit.SECONDS)).isTrue();
                    assertThat(redisView.exists("lock:stall")).isFalse();

                    System.out.printf("MEASURED stall: contender got the lock %d ms after the holder was cut off "
                            + "(watchdog timeout %d ms); the holder was told at %d ms, while still running; its release "
                            + "took %d ms after the network came back; Redisson logged meanwhile: %s%n", contenderInAfterMs,
                            WATCHDOG.toMillis(), lossReportedAfterMs, releaseMs, redissonLog.problems());
                    assertThat(contenderInAfterMs).isLessThan(WATCHDOG.plusSeconds(3).toMillis());
                });
            });
        }
    }

    @Test
    void fencingTokenLetsStorageRefuseTheWriteOfAHolderWhoseLeaseRanOut() throws Exception {
        FencedStorage storage = new FencedStorage(true);
        RecordingListener events = new RecordingListener();
        StockService stock = new StockService(storage);
        try (TcpProxy proxy = TcpProxy.start(redis.port())) {
            Distlock.app(proxy.port(), WATCHDOG)
                    .withBean(LockListener.class, () -> events)
                    .withBean(StockService.class, () -> stock)
                    .run(holderApp -> {
                Distlock.app(redis.port(), WATCHDOG).run(contenderApp -> {
                    StockService staleHolder = holderApp.getBean(StockService.class);
                    LockTemplate contender = contenderApp.getBean(LockTemplate.class);

                    CompletableFuture<Boolean> staleWrite = CompletableFuture.supplyAsync(
                            () -> staleHolder.updateStock("sku-1", "written by the stale holder"));
                    Latches.await(stock.holding);
                    proxy.pause();

                    AtomicLong contenderToken = new AtomicLong();
                    await().atMost(WATCHDOG.plusSeconds(3)).pollInterval(Duration.ofMillis(20))
                            .until(() -> contender.tryRun("stock:sku-1", LockOptions.waitFor(Duration.ZERO).withFencing(),
                                    () -> {
                                        long token = LockContext.fencingToken().orElseThrow();
                                        contenderToken.set(token);
                                        assertThat(storage.write("sku-1", token, "written by the new holder")).isTrue();
                                    }));

                    proxy.resume();
                    stock.mayWrite.countDown();
                    boolean staleAccepted = staleWrite.get(30, TimeUnit.SECONDS);

                    System.out.printf("MEASURED fencing: stale holder token %d, new holder token %d; storage log %s%n",
                            stock.token.get(), contenderToken.get(), storage.log());
                    assertThat(contenderToken.get()).isGreaterThan(stock.token.get());
                    assertThat(staleAccepted).as("the stale holder's write is refused").isFalse();
                    assertThat(storage.read("sku-1")).isEqualTo("written by the new holder");
                    assertThat(events.leaseLost).hasSize(1);
                });
            });
        }
    }

    /** A bean as an application would write it: the fencing token guards the write. */
    static class StockService {

        final FencedStorage storage;
        final CountDownLatch holding = new CountDownLatch(1);
        final CountDownLatch mayWrite = new CountDownLatch(1);
        final AtomicLong token = new AtomicLong();

        StockService(FencedStorage storage) {
            this.storage = storage;
        }

        @DistributedLock(key = "'stock:' + #sku", waitTime = 0, leaseTime = DistributedLock.WATCHDOG, fenced = true)
        public boolean updateStock(String sku, String value) {
            long fence = LockContext.fencingToken().orElseThrow();
            token.set(fence);
            holding.countDown();
            // the "work" during which the holder is cut off from Redis
            Latches.await(mayWrite);
            return storage.write(sku, fence, value);
        }
    }
}

package io.github.distlock.zookeeper;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LeaseLostPolicy;
import io.github.distlock.LockEvent;
import io.github.distlock.LockLeaseLostException;
import io.github.distlock.LockListener;
import io.github.distlock.LockOptions;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.KillSession;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A holder whose ZooKeeper session expires while its code runs: {@link LeaseLostPolicy#INTERRUPT} stops the code as
 * soon as the loss is reported, and the call fails naming the key.
 */
@Timeout(60)
class ZooKeeperExpiredSessionInterruptsTheRunningCodeTest {

    @Test
    void anExpiredSessionInterruptsTheCodeAtOnce() throws Exception {
        try (TestingServer server = ZooKeeperTesting.startServer()) {
            CuratorFramework client = ZooKeeperTesting.connect(server.getConnectString());
            CompletableFuture<Long> reportedAt = new CompletableFuture<>();
            LockListener clock = new LockListener() {
                @Override
                public void onLeaseLost(LockEvent event) {
                    reportedAt.complete(System.nanoTime());
                }
            };
            try (ZooKeeperLockProvider provider = new ZooKeeperLockProvider(client, "/distlock-stop")) {
                DefaultLockTemplate template = new DefaultLockTemplate(provider, "lock:", Duration.ZERO, null,
                        List.of(clock));
                CountDownLatch held = new CountDownLatch(1);
                CompletableFuture<Long> stoppedAt = new CompletableFuture<>();
                CompletableFuture<Object> call = CompletableFuture.supplyAsync(() -> {
                    try {
                        return template.execute("expiring",
                                LockOptions.DEFAULTS.withLeaseLostPolicy(LeaseLostPolicy.INTERRUPT), () -> {
                                    held.countDown();
                                    try {
                                        return new CountDownLatch(1).await(30, TimeUnit.SECONDS);
                                    }
                                    catch (InterruptedException ex) {
                                        stoppedAt.complete(System.nanoTime());
                                        throw ex;
                                    }
                                });
                    }
                    catch (InterruptedException ex) {
                        throw new CompletionException(ex);
                    }
                });
                assertThat(held.await(10, TimeUnit.SECONDS)).isTrue();

                KillSession.kill(client.getZookeeperClient().getZooKeeper());

                long stopped = stoppedAt.get(20, TimeUnit.SECONDS);
                assertThat(Duration.ofNanos(stopped - reportedAt.get(1, TimeUnit.SECONDS)))
                        .as("from the report to the code's stop").isLessThan(Duration.ofMillis(500));
                assertThat(call).failsWithin(Duration.ofSeconds(10)).withThrowableThat().havingCause()
                        .isInstanceOf(LockLeaseLostException.class)
                        .withMessageStartingWith("Lock 'lock:expiring' was lost while its code ran")
                        .withCauseInstanceOf(InterruptedException.class);
                template.shutdown();
            }
            finally {
                client.close();
            }
        }
    }
}

package io.github.distlock.etcd;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.etcd.jetcd.Client;
import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LeaseLostPolicy;
import io.github.distlock.LockEvent;
import io.github.distlock.LockLeaseLostException;
import io.github.distlock.LockListener;
import io.github.distlock.LockOptions;
import io.github.distlock.testsupport.TcpProxy;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A holder cut off from etcd (its traffic stalls in a {@link TcpProxy}) while its code runs: the loss is reported when
 * its lease has gone unrenewed for two thirds of its TTL, and {@link LeaseLostPolicy#INTERRUPT} stops the code within
 * a third of the TTL (the renewal period) of the report.
 */
class EtcdCutOffHolderIsInterruptedTest extends EtcdServerTestBase {

    private static final Duration WATCHDOG = Duration.ofSeconds(2);

    @Override
    String namespace() {
        return "stop";
    }

    @Test
    void aCutOffHolderIsInterruptedWithinTheRenewalPeriodOfTheReportedLoss() throws Exception {
        CompletableFuture<Long> reportedAt = new CompletableFuture<>();
        LockListener clock = new LockListener() {
            @Override
            public void onLeaseLost(LockEvent event) {
                reportedAt.complete(System.nanoTime());
            }
        };
        TcpProxy proxy = closeLater(TcpProxy.start(server.clientPort()));
        Client holderClient = closeLater(EtcdTesting.connect("http://127.0.0.1:" + proxy.port()));
        EtcdLockProvider holderSide = closeLater(new EtcdLockProvider(holderClient, namespace(), WATCHDOG));
        DefaultLockTemplate template = new DefaultLockTemplate(holderSide, "lock:", Duration.ZERO, null, List.of(clock));
        CountDownLatch held = new CountDownLatch(1);
        CompletableFuture<Long> stoppedAt = new CompletableFuture<>();
        CompletableFuture<Object> call = CompletableFuture.supplyAsync(() -> {
            try {
                return template.execute("cut", LockOptions.DEFAULTS.withLeaseLostPolicy(LeaseLostPolicy.INTERRUPT),
                        () -> {
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

        proxy.pause();
        long stopped;
        try {
            stopped = stoppedAt.get(15, TimeUnit.SECONDS);
        }
        finally {
            proxy.resume();
        }

        assertThat(Duration.ofNanos(stopped - reportedAt.get(1, TimeUnit.SECONDS)))
                .as("from the report to the code's stop").isLessThan(WATCHDOG.dividedBy(3));
        assertThat(call).failsWithin(Duration.ofSeconds(15)).withThrowableThat().havingCause()
                .isInstanceOf(LockLeaseLostException.class)
                .withMessageStartingWith("Lock 'lock:cut' was lost while its code ran")
                .withCauseInstanceOf(InterruptedException.class);
        template.shutdown();
    }
}

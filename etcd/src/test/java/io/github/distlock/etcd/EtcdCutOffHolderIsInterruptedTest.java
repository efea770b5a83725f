package io.github.distlock.etcd;

import java.time.Duration;

import io.etcd.jetcd.Client;
import io.github.distlock.LeaseLostPolicy;
import io.github.distlock.testsupport.TcpProxy;
import io.github.distlock.test.InterruptOnLeaseLossCheck;
import org.junit.jupiter.api.Test;

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
        TcpProxy proxy = closeLater(TcpProxy.start(server.clientPort()));
        Client holderClient = closeLater(EtcdTesting.connect("http://127.0.0.1:" + proxy.port()));
        EtcdLockProvider holderSide = closeLater(new EtcdLockProvider(holderClient, namespace(), WATCHDOG));
        InterruptOnLeaseLossCheck.on(holderSide).run("cut", WATCHDOG.dividedBy(3), proxy::pause, proxy::resume);
    }
}

package io.github.distlock.etcd;

import io.etcd.jetcd.Client;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.test.LockTemplateContractTest;
import io.github.distlock.testsupport.EtcdServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The template's multi-key locks, re-entry, interrupts and give-backs on the etcd provider and a real etcd. */
class EtcdLockTemplateContractTest extends LockTemplateContractTest {

    private static EtcdServer server;
    private static Client client;

    private static EtcdTesting.Running running;

    @BeforeAll
    static void start() {
        running = EtcdTesting.Running.start();
        server = running.server();
        client = running.client();
    }

    @AfterAll
    static void stop() {
        running.stop();
    }

    @Override
    protected LockProvider createProvider() {
        EtcdServer.assumeRunning(server);
        return new EtcdLockProvider(client, "distlock-template/", EtcdTesting.WATCHDOG);
    }

    /** etcd answers slowest here (about 150 ms a case): fewer generated cases keep its run near 15 s. */
    @Override
    protected int modelTries() {
        return 100;
    }
}

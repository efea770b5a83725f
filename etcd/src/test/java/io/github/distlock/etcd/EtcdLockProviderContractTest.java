package io.github.distlock.etcd;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockInstance;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.test.LockProviderContractTest;
import io.github.distlock.testsupport.EtcdServer;
import io.github.distlock.testsupport.TcpProxy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** The provider contract on a real etcd server (a process on free ports, see {@link EtcdServer}). */
class EtcdLockProviderContractTest extends LockProviderContractTest {

    static final String NAMESPACE = "distlock-contract/";

    private static EtcdServer server;
    private static Client client;

    private static EtcdTesting.Running running;

    @BeforeAll
    static void startServer() {
        running = EtcdTesting.Running.start();
        server = running.server();
        client = running.client();
    }

    @AfterAll
    static void stopServer() {
        running.stop();
    }

    @Override
    protected LockProvider createProvider() {
        EtcdServer.assumeRunning(server);
        return new EtcdLockProvider(client, NAMESPACE, EtcdTesting.WATCHDOG);
    }

    private EtcdLockProvider etcd() {
        return (EtcdLockProvider) provider();
    }

    @Override
    protected Duration watchdogTimeout() {
        return EtcdTesting.WATCHDOG;
    }

    /**
     * A holder killed with SIGKILL: a client of its own through a proxy that is then closed, so that nothing renews
     * its lease and nothing revokes it (the provider's close tries to, and cannot get through).
     */
    @Override
    protected void acquireAndAbandon(LockRequest request) {
        try (TcpProxy proxy = TcpProxy.start(server.clientPort());
                Client dying = EtcdTesting.connect("http://127.0.0.1:" + proxy.port())) {
            EtcdLockProvider other = new EtcdLockProvider(dying, NAMESPACE, EtcdTesting.WATCHDOG);
            LockHandle handle = other.acquire(request).join();
            assertThat(handle).as("the lock to abandon").isNotNull();
            proxy.close();
            other.close();
        }
    }

    /** Every type: see {@link EtcdLockProvider#closeKey}. */
    @Override
    protected boolean closesKeys() {
        return true;
    }

    @Override
    protected boolean closesKeys(LockType type) {
        return true;
    }

    /**
     * A second jetcd client and provider on the same server, as another JVM would have (its own client id, session
     * lease and watches), announced like an application's; the provider closes its client.
     */
    @Override
    protected LockProvider createOtherInstance() {
        EtcdServer.assumeRunning(server);
        Client own = EtcdTesting.connect(server.endpoint());
        EtcdLockProvider other = new EtcdLockProvider(own, NAMESPACE, EtcdTesting.WATCHDOG) {
            @Override
            public void close() {
                try {
                    super.close();
                }
                finally {
                    own.close();
                }
            }
        };
        other.announce(new LockInstance("contract-other", "host-of-the-other", 2));
        return other;
    }

    /** An operator deleting the lock's entries. */
    @Override
    protected void expireBehindItsBack(String key) {
        String prefix = etcd().lockPrefix(key);
        List<KeyValue> entries = EtcdTesting.entries(client, prefix);
        assertThat(entries).as("entries of %s", key).isNotEmpty();
        for (KeyValue entry : entries) {
            client.getKVClient().delete(entry.getKey()).join();
        }
    }

    /** The entries under the key: the holder's and one per queued waiter. */
    @Override
    protected void awaitQueued(LockType type, String key, int count, CompletableFuture<LockHandle> latest) {
        String prefix = etcd().lockPrefix(key);
        await().atMost(slack()).until(() -> EtcdTesting.entries(client, prefix).size() >= count + 1);
    }
}

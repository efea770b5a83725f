package io.github.distlock.etcd;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import io.etcd.jetcd.Client;
import io.github.distlock.testsupport.EtcdServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

/**
 * One etcd server per test class, a client of its own, a provider per test on {@link #namespace()}, and whatever a
 * test hands to {@link #closeLater} closed after it (in reverse order). Without an etcd binary every test fails, or is
 * skipped with the documented switch ({@link EtcdServer#startUnlessSkipped()}).
 */
abstract class EtcdServerTestBase {

    static EtcdServer server;
    static Client client;
    EtcdLockProvider provider;
    private final List<AutoCloseable> closeables = new CopyOnWriteArrayList<>();

    /** The key namespace of this class's providers, apart from every other test class's. */
    abstract String namespace();

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
        client = null;
        server = null;
    }

    @BeforeEach
    void createProvider() {
        EtcdServer.assumeRunning(server);
        provider = new EtcdLockProvider(client, namespace(), EtcdTesting.WATCHDOG);
    }

    @AfterEach
    void closeAll() {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            try {
                closeables.get(i).close();
            }
            catch (Exception ignored) {
                // half-closed by the test
            }
        }
        closeables.clear();
        if (provider != null) {
            provider.close();
        }
    }

    <T extends AutoCloseable> T closeLater(T closeable) {
        closeables.add(closeable);
        return closeable;
    }
}

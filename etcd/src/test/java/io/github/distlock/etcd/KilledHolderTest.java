package io.github.distlock.etcd;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.etcd.jetcd.Client;
import io.github.distlock.testsupport.EtcdServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A holder JVM killed with SIGKILL: its lock lives until etcd expires its lease (the TTL after the last renewal, for a
 * watchdog lock; the fixed lease, rounded up to whole seconds, for a fixed one), not before.
 */
@Timeout(120)
class KilledHolderTest {

    private static final String NAMESPACE = "distlock-killed/";

    private static EtcdServer server;
    private static Client client;
    private static EtcdLockProvider provider;

    @BeforeAll
    static void start() {
        server = EtcdServer.startUnlessSkipped();
        if (server != null) {
            client = EtcdTesting.connect(server.endpoint());
            provider = new EtcdLockProvider(client, NAMESPACE, EtcdTesting.WATCHDOG);
        }
    }

    @org.junit.jupiter.api.BeforeEach
    void assumeServer() {
        EtcdServer.assumeRunning(server);
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            provider.close();
            client.close();
            server.close();
        }
    }

    @Test
    void aKilledHoldersWatchdogLockIsFreeWhenItsLeaseExpiresNotBefore() throws Exception {
        long freedAfter = killHolderAndTimeTheLock("killed-watchdog", Duration.ZERO);
        // renewed every third of the TTL: the last renewal was at most that long before the kill
        assertThat(freedAfter).isGreaterThanOrEqualTo(EtcdTesting.WATCHDOG.toMillis() * 2 / 3)
                .isLessThan(EtcdTesting.WATCHDOG.plusSeconds(5).toMillis());
    }

    /** A fixed lease of a dead holder lives its lease (rounded up to whole seconds), not less. */
    @Test
    void aKilledHoldersFixedLeaseEndsAfterTheLeaseNotBefore() throws Exception {
        Duration lease = Duration.ofMillis(4500);
        long freedAfter = killHolderAndTimeTheLock("killed-fixed", lease);
        assertThat(freedAfter + killedAfterAcquisition).as("free after the acquisition, ms")
                .isGreaterThanOrEqualTo(lease.toMillis()).isLessThan(lease.plusSeconds(6).toMillis());
    }

    private static long killedAfterAcquisition;

    /** Kills a holder of {@code key}; returns how long after the kill the lock came free, in ms. */
    private static long killHolderAndTimeTheLock(String key, Duration lease) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process holder = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "-XX:TieredStopAtLevel=1",
                "-Xmx128m", HolderMain.class.getName(), server.endpoint(), key, Long.toString(lease.toMillis()))
                .redirectErrorStream(true).start();
        List<String> output = new CopyOnWriteArrayList<>();
        BlockingQueue<String> holding = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader lines = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = lines.readLine()) != null) {
                    output.add(line);
                    if (line.equals("HOLDING")) {
                        holding.add(line);
                    }
                }
            }
            catch (IOException ignored) {
                // the process died
            }
        });
        reader.setDaemon(true);
        reader.start();
        try {
            assertThat(holding.poll(60, TimeUnit.SECONDS)).as("the holder JVM's report; its output: %s", output).isNotNull();
            long held = System.nanoTime();
            assertThat(tryOnce(key)).as("the lock while its holder lives").isNull();
            holder.destroyForcibly(); // SIGKILL
            assertThat(holder.waitFor(10, TimeUnit.SECONDS)).isTrue();
            long killed = System.nanoTime();
            // the holder had the lock before it said so: a lower bound of how long before the kill it was taken
            killedAfterAcquisition = TimeUnit.NANOSECONDS.toMillis(killed - held);
            assertThat(tryOnce(key)).as("the lock right after its holder was killed").isNull();
            LockHandle next = provider.acquire(new LockRequest(key, Duration.ofSeconds(30).toNanos(), 0, false,
                    LockType.REENTRANT, LockOwner.next())).get(40, TimeUnit.SECONDS);
            long freedAfter = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
            assertThat(next).as("the lock after its holder's lease expired").isNotNull();
            System.out.println("MEASURED etcd killed holder (" + (lease.isZero() ? "watchdog" : "fixed lease " + lease)
                    + "): lock free " + freedAfter + " ms after SIGKILL, killed " + killedAfterAcquisition
                    + " ms after the holder reported it (watchdog TTL " + EtcdTesting.WATCHDOG.toMillis() + " ms)");
            assertThat(next.release()).isTrue();
            return freedAfter;
        }
        finally {
            holder.destroyForcibly();
        }
    }

    private static LockHandle tryOnce(String key) throws Exception {
        LockHandle handle = provider.acquire(new LockRequest(key, 0, 0, false, LockType.REENTRANT, LockOwner.next()))
                .get(10, TimeUnit.SECONDS);
        if (handle != null) {
            handle.release();
        }
        return handle;
    }

    /** The holder JVM: takes the lock, says so, and waits to be killed. */
    public static final class HolderMain {

        public static void main(String[] args) throws Exception {
            Client client = EtcdTesting.connect(args[0]);
            EtcdLockProvider provider = new EtcdLockProvider(client, NAMESPACE, EtcdTesting.WATCHDOG);
            LockHandle handle = provider.acquire(new LockRequest(args[1], 0,
                    TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[2])), false, LockType.REENTRANT, LockOwner.next())).join();
            System.out.println(handle != null ? "HOLDING" : "NOT ACQUIRED");
            new java.util.concurrent.CountDownLatch(1).await(); // until killed
        }
    }
}

package io.github.distlock.zookeeper;

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
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A holder JVM killed with SIGKILL: its lock lives until the server expires its session (the session timeout after
 * the last heartbeat the server heard), not before, and then goes, whatever its lease.
 */
@Timeout(120)
class KilledHolderTest {

    private static final String BASE = "/distlock-killed";

    private static TestingServer server;
    private static CuratorFramework client;
    private static ZooKeeperLockProvider provider;

    @BeforeAll
    static void start() throws Exception {
        server = ZooKeeperTesting.startServer();
        client = ZooKeeperTesting.connect(server.getConnectString());
        provider = new ZooKeeperLockProvider(client, BASE);
    }

    @AfterAll
    static void stop() throws Exception {
        provider.close();
        client.close();
        server.close();
    }

    @Test
    void aKilledHoldersWatchdogLockIsFreeWhenItsSessionExpiresNotBefore() throws Exception {
        long freedAfter = killHolderAndTimeTheLock("killed-watchdog", Duration.ZERO);
        // the server heard the holder at most a heartbeat (a third of the session timeout) before the kill
        assertThat(freedAfter).isGreaterThanOrEqualTo(ZooKeeperTesting.SESSION_TIMEOUT.toMillis() * 2 / 3)
                .isLessThan(ZooKeeperTesting.SESSION_TIMEOUT.plusSeconds(5).toMillis());
    }

    /** The documented difference from Redis and etcd: a dead holder's lock goes with its session, before its lease. */
    @Test
    void aKilledHoldersFixedLeaseLongerThanTheSessionEndsWithTheSession() throws Exception {
        Duration lease = Duration.ofSeconds(20);
        long freedAfter = killHolderAndTimeTheLock("killed-fixed", lease);
        assertThat(freedAfter).isGreaterThanOrEqualTo(ZooKeeperTesting.SESSION_TIMEOUT.toMillis() * 2 / 3)
                .isLessThan(lease.toMillis());
    }

    /** Kills a holder of {@code key}; returns how long after the kill the lock came free, in ms. */
    private static long killHolderAndTimeTheLock(String key, Duration lease) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process holder = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "-XX:TieredStopAtLevel=1",
                "-Xmx128m", HolderMain.class.getName(), server.getConnectString(), key, Long.toString(lease.toMillis()))
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
            assertThat(tryOnce(key)).as("the lock while its holder lives").isNull();
            holder.destroyForcibly(); // SIGKILL
            assertThat(holder.waitFor(10, TimeUnit.SECONDS)).isTrue();
            long killed = System.nanoTime();
            assertThat(tryOnce(key)).as("the lock right after its holder was killed").isNull();
            LockHandle next = provider.acquire(new LockRequest(key, Duration.ofSeconds(30).toNanos(), 0, false,
                    LockType.REENTRANT, LockOwner.next())).get(40, TimeUnit.SECONDS);
            long freedAfter = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
            assertThat(next).as("the lock after its holder's session expired").isNotNull();
            System.out.println("MEASURED zookeeper killed holder (" + (lease.isZero() ? "watchdog" : "fixed lease " + lease)
                    + "): lock free " + freedAfter + " ms after SIGKILL (session timeout "
                    + ZooKeeperTesting.SESSION_TIMEOUT.toMillis() + " ms)");
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
            CuratorFramework client = ZooKeeperTesting.connect(args[0]);
            ZooKeeperLockProvider provider = new ZooKeeperLockProvider(client, BASE);
            LockHandle handle = provider.acquire(new LockRequest(args[1], 0,
                    TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[2])), false, LockType.REENTRANT, LockOwner.next())).join();
            System.out.println(handle != null ? "HOLDING" : "NOT ACQUIRED");
            new java.util.concurrent.CountDownLatch(1).await(); // until killed
        }
    }
}

package io.github.distlock.integration;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

import io.github.distlock.testsupport.EtcdServer;
import io.github.distlock.testsupport.RedisServer;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Leader hand-over time of {@code LockRegistryLeaderInitiator} on {@link DistlockLockRegistry}, on every backend:
 * instances in their own JVMs ({@link LeaderProcessMain}); the leader's JVM is killed (SIGKILL), or paused
 * (SIGSTOP) past its lease and resumed (SIGCONT); measured from the signal to the moment another instance is granted
 * leadership. At most one leader at a time is checked with the fencing tokens: every grant's token is higher than the
 * last, and a write the leaders report carrying a lower token than one already written is what fenced storage refuses
 * (a paused leader that resumes and writes before it learns it was revoked); those are counted.
 *
 * <p>Not in the default test run (minutes, and JVMs started per run): {@code ./mvnw -o -pl spring-integration -am
 * verify -Dtest=LeaderHandOverMeasurement -Dsurefire.failIfNoSpecifiedTests=false -Ddistlock.integration.handover=true}
 * with {@code -Dhandover.backends=redis,postgres,zookeeper,etcd -Dhandover.runs=5 -Dhandover.watchdog-ms=3000}.
 */
@EnabledIfSystemProperty(named = "distlock.integration.handover", matches = "true")
class LeaderHandOverMeasurement {

    private static final long WATCHDOG_MS = Long.getLong("handover.watchdog-ms", 3000);

    private static final int RUNS = Integer.getInteger("handover.runs", 5);

    private final List<String> report = new ArrayList<>();

    @Test
    void measure() throws Exception {
        report.add(String.format(Locale.ROOT, "| backend | fault | runs | hand-over ms: min / median / max | stale "
                + "writes refused by fencing | resumed leader revoked after, ms (median) |"));
        report.add("|---|---|---|---|---|---|");
        for (String backend : System.getProperty("handover.backends", "redis,postgres,zookeeper,etcd").split(",")) {
            switch (backend.trim()) {
                case "redis" -> {
                    try (RedisServer redis = RedisServer.start()) {
                        measure("Redis", "measure.redis=" + redis.uri(), "distlock.backend=redis");
                    }
                }
                case "postgres" -> {
                    try (EmbeddedPostgres postgres = EmbeddedPostgres.builder().setPort(0).start()) {
                        measure("PostgreSQL", "distlock.backend=jdbc",
                                "spring.datasource.url=" + postgres.getJdbcUrl("postgres", "postgres"),
                                "distlock.jdbc.initialize-schema=always");
                    }
                }
                case "zookeeper" -> {
                    // a tick of 250 ms lets sessions as short as 500 ms (the default tick of 3 s: at least 6 s)
                    InstanceSpec spec = new InstanceSpec(null, -1, -1, -1, true, -1, 250, -1);
                    try (TestingServer zookeeper = new TestingServer(spec, true)) {
                        measure("ZooKeeper", "distlock.backend=zookeeper",
                                "distlock.zookeeper.connect-string=" + zookeeper.getConnectString());
                    }
                }
                case "etcd" -> {
                    try (EtcdServer etcd = EtcdServer.start()) {
                        measure("etcd", "distlock.backend=etcd", "distlock.etcd.endpoints=" + etcd.endpoint());
                    }
                }
                default -> throw new IllegalArgumentException("handover.backends: unknown backend " + backend);
            }
        }
        String table = String.join("\n", report);
        System.out.println(table);
        Path out = Path.of("target", "handover.md");
        Files.writeString(out, "watchdog timeout " + WATCHDOG_MS + " ms, heart beat "
                + "500 ms, busy wait 50 ms (LockRegistryLeaderInitiator's defaults), " + RUNS + " runs per fault\n\n"
                + table + "\n");
    }

    private void measure(String name, String... backendProperties) throws Exception {
        List<String> properties = new ArrayList<>(List.of(backendProperties));
        properties.add("distlock.watchdog-timeout=" + WATCHDOG_MS + "ms");
        Fenced store = new Fenced();
        List<Instance> all = new ArrayList<>();
        try {
            Instance first = Instance.start(properties, store);
            all.add(first);
            first.awaitLine("READY", 120);
            first.awaitLine("GRANTED", 30);
            Instance leader = first;
            Instance follower = Instance.start(properties, store);
            all.add(follower);
            follower.awaitLine("READY", 120);
            follower.awaitLine("REFUSED", 30);

            long[] killed = new long[RUNS];
            for (int run = 0; run < RUNS; run++) {
                long signalled = System.currentTimeMillis();
                leader.kill();
                long granted = Long.parseLong(follower.awaitLine("GRANTED", 120).split(" ")[1]);
                killed[run] = granted - signalled;
                leader = follower;
                follower = Instance.start(properties, store);
                all.add(follower);
                follower.awaitLine("READY", 120);
                follower.awaitLine("REFUSED", 30);
            }
            int staleBefore = store.refused;
            report.add(row(name, "SIGKILL", killed, store.refused, null));

            long[] paused = new long[RUNS];
            long[] revokedAfterResume = new long[RUNS];
            for (int run = 0; run < RUNS; run++) {
                long signalled = System.currentTimeMillis();
                leader.signal("STOP");
                long granted = Long.parseLong(follower.awaitLine("GRANTED", 120).split(" ")[1]);
                paused[run] = granted - signalled;
                long resumed = System.currentTimeMillis();
                leader.signal("CONT");
                long revoked = Long.parseLong(leader.awaitLine("REVOKED", 60).split(" ")[0]);
                revokedAfterResume[run] = revoked - resumed;
                leader.awaitLine("REFUSED", 30);
                Instance next = follower;
                follower = leader;
                leader = next;
            }
            report.add(row(name, "SIGSTOP past the lease, then SIGCONT", paused, store.refused - staleBefore,
                    revokedAfterResume));
            assertThat(store.grantsInOrder).as("every grant's token is higher than the last").isTrue();
        }
        finally {
            for (Instance instance : all) {
                instance.close();
            }
        }
    }

    private static String row(String backend, String fault, long[] millis, int stale, long[] revoked) {
        long[] sorted = LongStream.of(millis).sorted().toArray();
        String revokedText = (revoked == null) ? "–"
                : Long.toString(LongStream.of(revoked).sorted().toArray()[revoked.length / 2]);
        return String.format(Locale.ROOT, "| %s | %s | %d | %d / %d / %d | %d | %s |", backend, fault, millis.length,
                sorted[0], sorted[sorted.length / 2], sorted[sorted.length - 1], stale, revokedText);
    }

    /** Fenced storage: keeps the highest token written and refuses lower ones. */
    static final class Fenced {

        private long highest = -1;

        private long lastGrant = -1;

        volatile boolean grantsInOrder = true;

        volatile int refused;

        synchronized void granted(long token) {
            if (token <= lastGrant) {
                grantsInOrder = false;
            }
            lastGrant = token;
        }

        synchronized void write(long token) {
            if (token < highest) {
                refused++;
            }
            else {
                highest = token;
            }
        }
    }

    /** One {@link LeaderProcessMain} JVM. */
    static final class Instance implements AutoCloseable {

        private final Process process;

        private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();

        private final List<String> output = new CopyOnWriteArrayList<>();

        private final Fenced store;

        private Instance(Process process, Fenced store) {
            this.process = process;
            this.store = store;
            Thread reader = new Thread(this::read, "instance-" + process.pid());
            reader.setDaemon(true);
            reader.start();
        }

        static Instance start(List<String> properties, Fenced store) throws IOException {
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            List<String> command = new ArrayList<>(List.of(java, "-cp", System.getProperty("java.class.path"),
                    "-Xshare:auto", "-Xmx256m", "-XX:TieredStopAtLevel=1", LeaderProcessMain.class.getName()));
            command.addAll(properties);
            return new Instance(new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start(), store);
        }

        /** The rest of the next line starting with {@code prefix}. */
        String awaitLine(String prefix, long seconds) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            while (true) {
                String line = lines.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
                if (line == null) {
                    throw new AssertionError("Instance " + process.pid() + " printed no " + prefix + " within "
                            + seconds + " s (alive: " + process.isAlive() + "):\n" + String.join("\n", output));
                }
                if (line.startsWith(prefix)) {
                    return line.substring(prefix.length()).trim();
                }
            }
        }

        void signal(String signal) throws IOException, InterruptedException {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).start();
            if (kill.waitFor() != 0) {
                throw new IllegalStateException("kill -" + signal + " " + process.pid() + " failed");
            }
        }

        void kill() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }

        @Override
        public void close() throws Exception {
            if (process.isAlive()) {
                signal("CONT");
                kill();
            }
        }

        private void read() {
            try (BufferedReader reader = new BufferedReader(
                    new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = reader.readLine()) != null) {
                    if (line.startsWith("WRITE ")) {
                        store.write(Long.parseLong(line.split(" ")[1]));
                        continue;
                    }
                    if (line.startsWith("GRANTED ")) {
                        store.granted(Long.parseLong(line.split(" ")[1]));
                    }
                    output.add(line);
                    lines.add(line);
                }
            }
            catch (IOException ex) {
                // the process is gone
            }
            catch (RuntimeException ex) {
                throw new UncheckedIOException(new IOException("unreadable line from " + process.pid(), ex));
            }
        }
    }
}

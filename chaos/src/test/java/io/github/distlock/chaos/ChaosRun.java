package io.github.distlock.chaos;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

import io.github.distlock.chaos.Checker.Verdict;
import io.github.distlock.chaos.Topology.ServerFault;

import static org.awaitility.Awaitility.await;

/**
 * One chaos run of a topology: three client JVMs run the lock-set workload while faults, drawn from a seeded schedule,
 * come and go, several at once; then the faults heal, the clients run on calmly for a while, stop, and the
 * {@link Checker} reads what they recorded.
 *
 * <p>The fault kinds: {@code pause-client} (SIGSTOP for one to two leases, then SIGCONT), {@code cut-client} (the
 * client's proxies stall for one to two leases; half of the time its connections are then reset), {@code kill-client}
 * (SIGKILL; a new client takes its place), and the topology's own server faults (one at a time, healed after one to
 * two leases), and {@code cut-server} (every client's connections to one server stall for one to two leases; half of
 * the time they are then reset). The next kind is always one of those applied least so far, so that each is applied about as often;
 * client faults go to clients not under a fault, and one client is always left alone.
 *
 * <p>Everything is kept in the run's directory: each client's history and log, {@code faults.log} (the schedule as
 * it was applied, with the seed that replays it: {@code -Dchaos.seed}), {@code result.txt}.
 */
final class ChaosRun {

    /** The lease of every lock: {@code distlock.watchdog-timeout}. */
    static final Duration LEASE = Duration.ofSeconds(3);

    /** After the last fault healed, every key must be granted again within this time. */
    static final Duration RECOVERY_BOUND = Duration.ofSeconds(30);

    private static final int CLIENTS = 3;
    private static final int THREADS = 4;
    private static final int KEYS = 2;

    private final Topology topology;
    private final Path dir;
    private final long seed;
    private final Random random;
    private final List<ClientProcess> clients = Collections.synchronizedList(new ArrayList<>());
    private final Set<String> busy = ConcurrentHashMap.newKeySet();
    private final AtomicInteger nextClient = new AtomicInteger(1);
    private final Map<String, Integer> applied = new LinkedHashMap<>();
    private final List<String> errors = Collections.synchronizedList(new ArrayList<>());
    private volatile boolean serverFaulted;
    private ClientProcess spare;
    private PrintWriter faults;
    private SetStore store;

    ChaosRun(Topology topology, Path dir, long seed) {
        this.topology = topology;
        this.dir = dir;
        this.seed = seed;
        this.random = new Random(seed);
    }

    /** What one run found: the verdicts for the fenced and the unfenced keys, and the faults applied. */
    record Outcome(String topology, Duration duration, long seed, Map<String, Integer> faults, Verdict fenced,
            Verdict unfenced, List<String> errors, Path dir) {

        String line(Verdict verdict) {
            String faultList = faults.entrySet().stream().map(e -> e.getKey() + "x" + e.getValue())
                    .collect(Collectors.joining(","));
            return "CHAOS backend=" + topology.split("/")[0] + " topology=" + topology.split("/")[1] + " faults="
                    + faultList + " ops=" + verdict.ops() + " fenced=" + (verdict.fenced() ? "yes" : "no")
                    + " overlaps=" + verdict.overlaps() + " stale_accepted=" + verdict.staleAccepted()
                    + " lost_updates=" + verdict.lostUpdates() + " lease_losses=" + verdict.lossesDetected() + "/"
                    + verdict.lossesReported() + " unreported_in_failover=" + verdict.lossesUnreportedInFailover()
                    + " recovery_ms=" + verdict.recoveryMs() + " acknowledged="
                    + verdict.acknowledged() + " unexplained_overlaps=" + verdict.unexplained() + " explained_by=" + verdict.explainedBy().entrySet().stream()
                            .map(e -> e.getKey() + ":" + e.getValue()).collect(Collectors.joining(",")) + " phantoms="
                    + verdict.phantoms() + " duplicate_tokens=" + verdict.duplicateTokens() + " seconds="
                    + duration.toSeconds() + " seed=" + seed;
        }
    }

    Outcome run(Duration faultPhase, Duration calm) throws Exception {
        Files.createDirectories(dir);
        long started = System.nanoTime();
        List<String> kinds = new ArrayList<>(List.of("pause-client", "cut-client", "kill-client"));
        Map<String, ServerFault> serverFaults = new LinkedHashMap<>();
        topology.serverFaults().forEach(fault -> serverFaults.put(fault.kind(), fault));
        kinds.addAll(serverFaults.keySet());
        kinds.add("cut-server");
        kinds.forEach(kind -> applied.put(kind, 0));
        try (SetStore store = new SetStore(SetStore.Fencing.valueOf(
                System.getProperty("chaos.store.fencing", "full").toUpperCase(java.util.Locale.ROOT)));
                PrintWriter faults = new PrintWriter(Files.newBufferedWriter(dir.resolve("faults.log")), true)) {
            this.store = store;
            this.faults = faults;
            log("# topology=" + topology.backend() + "/" + topology.name() + " seed=" + seed + " faultPhase="
                    + faultPhase + " calm=" + calm + " lease=" + LEASE);
            List<ClientProcess> first = new ArrayList<>();
            for (int i = 0; i < CLIENTS; i++) {
                first.add(startClient());
            }
            spare = startClient();
            for (ClientProcess client : first) {
                client.awaitReady(Duration.ofSeconds(90));
            }
            first.forEach(ClientProcess::go);
            clients.addAll(first);
            // faults start once the workload runs: a fault in the clients' first seconds finds nobody holding
            await("the workload's first writes").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
                    .until(() -> store.acceptedWrites().size() >= 20);
            log("# workload running " + now());
            List<Thread> running = new ArrayList<>();
            long end = System.nanoTime() + faultPhase.toNanos();
            // about seven of each kind over the phase, at least one fault every 4 s
            long gapMs = Math.min(4000, faultPhase.toMillis() / (kinds.size() * 7L));
            while (System.nanoTime() < end) {
                sleep(gapMs / 2 + (long) (random.nextDouble() * gapMs));
                if (System.nanoTime() >= end) {
                    break;
                }
                String kind = next(kinds);
                if (kind == null) {
                    continue;
                }
                long duration = LEASE.toMillis() + (long) (random.nextDouble() * LEASE.toMillis());
                boolean reset = random.nextBoolean();
                Thread fault = switch (kind) {
                    case "pause-client", "cut-client", "kill-client" -> {
                        ClientProcess target = pickClient();
                        yield started(() -> clientFault(kind, target, duration, reset));
                    }
                    case "cut-server" -> {
                        serverFaulted = true;
                        List<Integer> ports = topology.clientPorts();
                        int port = ports.get(random.nextInt(ports.size()));
                        yield started(() -> cutServer(port, duration, reset));
                    }
                    default -> {
                        serverFaulted = true;
                        ServerFault server = serverFaults.get(kind);
                        yield started(() -> serverFault(server, duration));
                    }
                };
                applied.merge(kind, 1, Integer::sum);
                running.add(fault);
            }
            for (Thread fault : running) {
                fault.join();
            }
            topology.awaitServing(Duration.ofSeconds(60));
            long healed = now();
            log("HEALED " + healed);
            // calm until every key was written again (granted again), within the bound the checker holds the run to,
            // then for the calm asked for
            List<String> keys = new ArrayList<>();
            for (int k = 0; k < KEYS; k++) {
                keys.add("f" + k);
                keys.add("u" + k);
            }
            try {
                await("every key granted again after the last heal").atMost(RECOVERY_BOUND.plusSeconds(5))
                        .pollInterval(Duration.ofMillis(50)).until(() -> store.allWrittenSince(keys, healed));
            }
            catch (org.awaitility.core.ConditionTimeoutException ex) {
                errors.add("not every key was granted again within " + RECOVERY_BOUND + " of the last heal");
            }
            sleep(calm.toMillis());
            List<ClientProcess> last = new ArrayList<>(clients);
            for (ClientProcess client : last) {
                if (!client.stop(Duration.ofSeconds(60))) {
                    errors.add("client " + client.id() + " did not stop within 60 s: killed");
                }
            }
            Map<String, List<String>> sets = store.snapshot();
            writeSets(dir, sets);
            History history = History.read(dir, "chaos:");
            long leaseUs = LEASE.toNanos() / 1000;
            Outcome outcome = new Outcome(topology.backend() + "/" + topology.name(),
                    Duration.ofNanos(System.nanoTime() - started), seed, Map.copyOf(applied),
                    Checker.check(history, sets, true, leaseUs), Checker.check(history, sets, false, leaseUs),
                    List.copyOf(errors), dir);
            Files.writeString(dir.resolve("result.txt"), outcome.line(outcome.fenced()) + "\n"
                    + outcome.line(outcome.unfenced()) + "\n" + String.join("\n", outcome.fenced().examples()) + "\n"
                    + String.join("\n", outcome.unfenced().examples()) + "\nerrors: " + errors + "\n");
            return outcome;
        }
        finally {
            for (ClientProcess client : new ArrayList<>(clients)) {
                client.close();
            }
            if (spare != null) {
                spare.close();
            }
        }
    }

    /** One of the kinds applied least so far that can be applied now, or null when none can. */
    private String next(List<String> kinds) {
        List<String> candidates = new ArrayList<>();
        for (String kind : kinds) {
            boolean clientKind = kind.endsWith("-client");
            if (clientKind ? busy.size() < CLIENTS - 1 : !serverFaulted) {
                candidates.add(kind);
            }
        }
        if (candidates.isEmpty()) {
            return null;
        }
        int least = candidates.stream().mapToInt(applied::get).min().orElseThrow();
        List<String> leastApplied = candidates.stream().filter(kind -> applied.get(kind) == least).toList();
        return leastApplied.get(random.nextInt(leastApplied.size()));
    }

    private ClientProcess pickClient() {
        List<ClientProcess> free;
        synchronized (clients) {
            free = clients.stream().filter(c -> !busy.contains(c.id())).toList();
        }
        ClientProcess target = free.get(random.nextInt(free.size()));
        busy.add(target.id());
        return target;
    }

    private void clientFault(String kind, ClientProcess client, long durationMs, boolean reset) {
        try {
            log("FAULT " + kind + " " + client.id() + " " + now());
            switch (kind) {
                case "pause-client" -> {
                    client.pause();
                    sleep(durationMs);
                    client.resume();
                }
                case "cut-client" -> {
                    client.cut();
                    sleep(durationMs);
                    client.reconnect(reset);
                }
                default -> {
                    client.kill();
                    log("KILLED " + client.id() + " " + now());
                    clients.remove(client);
                    client.close();
                    ClientProcess replacement = takeSpare();
                    replacement.go();
                    clients.add(replacement);
                }
            }
            log("HEAL " + kind + " " + client.id() + " " + now());
        }
        catch (Exception ex) {
            errors.add(kind + " of " + client.id() + ": " + ex);
            log("# ERROR " + kind + " " + client.id() + " " + ex);
        }
        finally {
            busy.remove(client.id());
        }
    }

    /** Every client's connections to one server stall: the server is cut off from the clients, not from its peers. */
    private void cutServer(int port, long durationMs, boolean reset) {
        List<ClientProcess> cut = new ArrayList<>(clients);
        try {
            log("FAULT cut-server " + port + " " + now());
            cut.forEach(client -> client.cut(port));
            sleep(durationMs);
        }
        finally {
            cut.forEach(client -> client.reconnect(port, reset));
            log("HEAL cut-server " + port + " " + now());
            serverFaulted = false;
        }
    }

    private void serverFault(ServerFault fault, long durationMs) {
        try {
            log("FAULT " + fault.kind() + " server " + now());
            Runnable heal = fault.inject();
            sleep(durationMs);
            heal.run();
            // the next server fault only once this one is over: a failover needs a replica in sync, a quorum a leader
            topology.awaitServing(Duration.ofSeconds(60));
            log("HEAL " + fault.kind() + " server " + now());
        }
        catch (Exception ex) {
            errors.add(fault.kind() + ": " + ex);
            log("# ERROR " + fault.kind() + " " + ex);
            log("HEAL " + fault.kind() + " server " + now());
        }
        finally {
            serverFaulted = false;
        }
    }

    /**
     * A spare client, started beforehand, takes a killed client's place (a JVM's start takes seconds on 2 cores); a new
     * spare starts at once. A spare that started while the backend was down has refused to start (distlock checks the
     * backend at startup): another one is started until one is ready.
     */
    private ClientProcess takeSpare() throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (true) {
            ClientProcess candidate;
            synchronized (this) {
                candidate = spare;
                spare = startClient();
            }
            try {
                candidate.awaitReady(Duration.ofSeconds(90));
                return candidate;
            }
            catch (IllegalStateException ex) {
                candidate.close();
                if (System.nanoTime() > deadline) {
                    throw ex;
                }
                log("# spare " + candidate.id() + " did not start (backend down at its start?): another one");
            }
        }
    }

    private ClientProcess startClient() {
        String id = "c" + nextClient.getAndIncrement();
        return ClientProcess.start(id, topology, dir, List.of("--chaos.store-port=" + store.port(),
                "--chaos.threads=" + THREADS, "--chaos.keys=" + KEYS, "--chaos.hold-max-ms=100",
                "--chaos.wait-ms=" + (LEASE.toMillis() * 4), "--distlock.watchdog-timeout=" + LEASE.toMillis() + "ms",
                "--distlock.key-prefix=chaos:"));
    }

    private static Thread started(Runnable fault) {
        Thread thread = new Thread(fault, "chaos-fault");
        thread.start();
        return thread;
    }

    private synchronized void log(String line) {
        faults.println(line);
    }

    static long now() {
        return System.nanoTime() / 1000;
    }

    /** The schedule's own pacing (not a wait for something to happen). */
    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted", ex);
        }
    }

    /** The store's final sets, {@code <key> <e1,e2,...>} per line: with the histories, all a check needs. */
    static void writeSets(Path dir, Map<String, List<String>> sets) throws IOException {
        StringBuilder text = new StringBuilder();
        sets.forEach((key, elements) -> text.append(key).append(' ').append(String.join(",", elements)).append('\n'));
        Files.writeString(dir.resolve("final-sets.txt"), text);
    }

    static Map<String, List<String>> readSets(Path dir) throws IOException {
        Map<String, List<String>> sets = new LinkedHashMap<>();
        for (String line : Files.readAllLines(dir.resolve("final-sets.txt"))) {
            String[] parts = line.split(" ", 2);
            sets.put(parts[0], (parts.length < 2 || parts[1].isEmpty()) ? List.of() : List.of(parts[1].split(",")));
        }
        return sets;
    }

    static void deleteQuietly(Path dir) {
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
        catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }
}

package io.github.distlock.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A real etcd cluster: {@code members} {@code etcd} processes on free loopback ports (a client and a peer port each),
 * each with a data directory of its own, joined through {@code --initial-cluster}; members can be killed, restarted
 * on the same ports and data (they rejoin), and the leader found.
 *
 * <pre>{@code
 * try (EtcdCluster etcd = EtcdCluster.start(3)) {
 *     // jetcd: Client.builder().endpoints(etcd.endpoints().toArray(String[]::new))
 *     int leader = etcd.awaitLeader(Duration.ofSeconds(10));
 *     etcd.kill(leader);
 *     int next = etcd.awaitLeader(Duration.ofSeconds(10));
 *     etcd.restart(leader);
 * }
 * }</pre>
 *
 * <p>The binary is found as {@link EtcdServer#binary()} finds it, with the same switch to skip instead of failing when
 * there is none. Members run with {@value #HEARTBEAT_MILLIS} ms heartbeats and a {@value #ELECTION_TIMEOUT_MILLIS} ms
 * election timeout (etcd's defaults are 100 and 1000 ms too: production-like, and a killed leader is replaced in one
 * to two seconds); etcd's minimum lease TTL is 1.5 election timeouts, 1.5 s. Ports are picked below the kernel's
 * ephemeral range, so that a port stays free for a restart while its member is down. Leaders are asked over etcd's v3
 * JSON gateway ({@code POST /v3/maintenance/status}): no etcdctl and no client library needed. {@link #close()} stops
 * every member and deletes their directories (a shutdown hook does, if the JVM ends first).
 */
public final class EtcdCluster implements AutoCloseable {

    /** The members' {@code --heartbeat-interval}, in milliseconds. */
    public static final int HEARTBEAT_MILLIS = 100;

    /** The members' {@code --election-timeout}, in milliseconds: how long followers wait for a leader's heartbeat. */
    public static final int ELECTION_TIMEOUT_MILLIS = 1000;

    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);
    private static final int START_ATTEMPTS = 3;
    private static final int LOG_TAIL_LINES = 40;
    private static final Pattern MEMBER_ID = Pattern.compile("\"member_id\":\"(\\d+)\"");
    private static final Pattern LEADER = Pattern.compile("\"leader\":\"(\\d+)\"");
    private static final Pattern RAFT_TERM = Pattern.compile("\"raftTerm\":\"(\\d+)\"");

    private final Path binary;
    private final Path root;
    private final List<Member> members;
    private final Thread shutdownHook;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(500)).build();

    private EtcdCluster(Path binary, Path root, List<Member> members) {
        this.binary = binary;
        this.root = root;
        this.members = List.copyOf(members);
        this.shutdownHook = new Thread(this::stopAll, "etcd-test-cluster-stop");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    /**
     * Starts a cluster and waits until every member is healthy and all agree on a leader.
     *
     * @param members how many members; 3 tolerates one killed, 5 two
     * @return the running cluster
     * @throws IllegalArgumentException when {@code members} is below 1
     * @throws IllegalStateException when a member does not start (the message holds its log's tail), or there is no
     *         etcd binary
     */
    public static EtcdCluster start(int members) {
        if (members < 1) {
            throw new IllegalArgumentException("EtcdCluster.start(members) needs at least 1 member, got " + members);
        }
        Path binary = EtcdServer.binary();
        for (int attempt = 1; ; attempt++) {
            try {
                return start(binary, members);
            }
            catch (PortTakenException ex) {
                if (attempt == START_ATTEMPTS) {
                    throw new IllegalStateException("etcd members could not bind their ports " + START_ATTEMPTS
                            + " times", ex);
                }
            }
        }
    }

    private static EtcdCluster start(Path binary, int count) {
        Path root;
        try {
            root = Files.createTempDirectory("distlock-etcd-cluster-");
        }
        catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        Set<Integer> taken = new HashSet<>();
        List<Member> members = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            members.add(new Member(i, "member-" + i, distinctPort(taken), distinctPort(taken),
                    root.resolve("member-" + i)));
        }
        String initialCluster = String.join(",", members.stream().map(m -> m.name + "=" + m.peerUrl()).toList());
        // a cluster of its own: members of another cluster that happen to reach these ports are refused
        String token = "distlock-" + UUID.randomUUID();
        members.forEach(member -> member.command = command(binary, member, initialCluster, token));
        EtcdCluster cluster = new EtcdCluster(binary, root, members);
        try {
            // all at once: a member of a new cluster is healthy only once a quorum has started
            members.forEach(cluster::launch);
            for (Member member : members) {
                cluster.awaitHealthy(member);
            }
            cluster.awaitLeader(START_TIMEOUT);
            for (Member member : members) {
                member.id = field(MEMBER_ID, cluster.status(member)).orElseThrow();
            }
            return cluster;
        }
        catch (RuntimeException ex) {
            cluster.close();
            throw ex;
        }
    }

    private static List<String> command(Path binary, Member member, String initialCluster, String token) {
        return List.of(binary.toString(),
                "--name", member.name,
                "--data-dir", member.directory.resolve("data").toString(),
                "--listen-client-urls", member.clientUrl(), "--advertise-client-urls", member.clientUrl(),
                "--listen-peer-urls", member.peerUrl(), "--initial-advertise-peer-urls", member.peerUrl(),
                // ignored on a restart: a member with a data directory rejoins from its write-ahead log
                "--initial-cluster", initialCluster, "--initial-cluster-state", "new",
                "--initial-cluster-token", token,
                "--heartbeat-interval", Integer.toString(HEARTBEAT_MILLIS),
                "--election-timeout", Integer.toString(ELECTION_TIMEOUT_MILLIS),
                "--log-level", "warn");
    }

    private static int distinctPort(Set<Integer> taken) {
        while (true) {
            int port = Ports.freeRestartablePort();
            if (taken.add(port)) {
                return port;
            }
        }
    }

    /** How many members the cluster has, running or not. */
    public int size() {
        return members.size();
    }

    /** Every member's client URL, {@code http://127.0.0.1:<port>}, in member order, running or not. */
    public List<String> endpoints() {
        return members.stream().map(Member::clientUrl).toList();
    }

    /**
     * The client port of a member; it stays the same across {@link #restart(int)}.
     *
     * @param i the member's index, 0 to {@code size() - 1}
     * @return its client port
     */
    public int clientPort(int i) {
        return member(i).clientPort;
    }

    /**
     * The process id of a running member, e.g. to pause it with {@code SIGSTOP}.
     *
     * @param i the member's index
     * @return its process id
     * @throws IllegalStateException when the member is not running
     */
    public long pid(int i) {
        Member member = member(i);
        Process process = member.process;
        if (process == null || !process.isAlive()) {
            throw new IllegalStateException(member + " is not running");
        }
        return process.pid();
    }

    /**
     * Whether a member's process is alive.
     *
     * @param i the member's index
     * @return true while it runs
     */
    public boolean isRunning(int i) {
        Process process = member(i).process;
        return process != null && process.isAlive();
    }

    /**
     * The member that is leader now: among the running members that answer, the one that reports itself leader in
     * the highest raft term (a member cut off from the others may still believe in itself in an older term).
     *
     * @return the leader's index
     * @throws IllegalStateException when no running member reports itself leader (an election is under way, or too
     *         few members run for a quorum)
     */
    public int leader() {
        int leader = -1;
        long highestTerm = -1;
        for (Member member : members) {
            if (!isRunning(member.index)) {
                continue;
            }
            String status;
            try {
                status = status(member);
            }
            catch (RuntimeException unreachable) {
                continue;
            }
            Optional<String> id = field(MEMBER_ID, status);
            long term = field(RAFT_TERM, status).map(Long::parseLong).orElse(0L);
            if (id.isPresent() && id.equals(field(LEADER, status)) && term > highestTerm) {
                leader = member.index;
                highestTerm = term;
            }
        }
        if (leader < 0) {
            throw new IllegalStateException("No member reports itself leader now: " + describe());
        }
        return leader;
    }

    /**
     * Waits until every running member answers and names the same leader, a running member of this cluster.
     *
     * @param timeout how long to wait; an election after a killed leader takes one to two seconds
     * @return the leader's index
     * @throws IllegalStateException when the timeout passes first
     */
    public int awaitLeader(Duration timeout) {
        return Poll.until(timeout, () -> "every running etcd member to name the same leader: " + describe(), () -> {
            Set<String> named = new HashSet<>();
            for (Member member : members) {
                if (isRunning(member.index)) {
                    named.add(field(LEADER, status(member)).orElse("0"));
                }
            }
            if (named.size() != 1 || named.contains("0")) {
                return Optional.empty();
            }
            String leaderId = named.iterator().next();
            return members.stream()
                    .filter(member -> isRunning(member.index) && leaderId.equals(idOf(member)))
                    .map(member -> member.index)
                    .findFirst();
        });
    }

    /**
     * Kills a member with {@code SIGKILL}, as a crash would, and waits until its process is gone. Its directory stays,
     * so {@link #restart(int)} brings it back with its data. A member that is not running is left as it is.
     *
     * @param i the member's index
     * @throws IllegalStateException when the process is still alive 10 s later
     */
    public void kill(int i) {
        Member member = member(i);
        Process process = member.process;
        if (process == null) {
            return;
        }
        process.destroyForcibly();
        awaitExit(member, process);
    }

    /**
     * Starts a member again on the same ports with the same data directory, and waits until it is healthy again (it
     * has rejoined and sees a leader) and names the same leader as the others. A running member is stopped first.
     *
     * @param i the member's index
     * @throws IllegalStateException when it does not rejoin within 30 s (the message holds its log's tail)
     */
    public void restart(int i) {
        Member member = member(i);
        stop(member);
        launch(member);
        awaitHealthy(member);
        awaitLeader(START_TIMEOUT);
    }

    /** Stops every member and deletes their directories. */
    @Override
    public void close() {
        stopAll();
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        }
        catch (IllegalStateException shuttingDown) {
            // the hook runs anyway
        }
        deleteRecursively(root);
    }

    /** The directory holding every member's data and log; {@link #close()} deletes it. */
    Path directory() {
        return root;
    }

    @Override
    public String toString() {
        return "EtcdCluster " + endpoints();
    }

    /**
     * Sends a request to a member's v3 JSON gateway and returns the response body.
     *
     * @param i the member's index
     * @param path e.g. {@code /v3/kv/put}
     * @param json the request body
     * @throws IllegalStateException when the member does not answer 200
     */
    String post(int i, String path, String json) {
        return post(member(i), path, json);
    }

    private String post(Member member, String path, String json) {
        HttpRequest request = HttpRequest.newBuilder(URI.create(member.clientUrl() + path))
                .timeout(Duration.ofSeconds(2))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json))
                .build();
        try {
            HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                throw new IllegalStateException(member + " answered " + response.statusCode() + " to " + path + ": "
                        + response.body());
            }
            return response.body();
        }
        catch (IOException ex) {
            throw new UncheckedIOException(member + " did not answer " + path, ex);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while asking " + member, ex);
        }
    }

    private String status(Member member) {
        return post(member, "/v3/maintenance/status", "{}");
    }

    private String idOf(Member member) {
        if (member.id == null) {
            // asked while the cluster starts, before the ids are known
            return field(MEMBER_ID, status(member)).orElse(null);
        }
        return member.id;
    }

    private synchronized void launch(Member member) {
        try {
            Files.createDirectories(member.directory);
            // appended: the log of a run before a kill stays, for the message should the restart fail
            member.process = new ProcessBuilder(member.command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(member.log().toFile())).start();
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Could not run " + binary + " for " + member, ex);
        }
    }

    /** Waits for {@code /health} (true once the member sees a leader); a member that exits fails at once. */
    private void awaitHealthy(Member member) {
        Process process = member.process;
        Poll.untilTrue(START_TIMEOUT, () -> member + " to become healthy; its log ends:\n" + logTail(member), () -> {
            if (!process.isAlive()) {
                String log = logTail(member);
                if (log.contains("address already in use")) {
                    throw new PortTakenException(member + ": " + log);
                }
                throw new DeadMemberException(member + " exited with " + process.exitValue() + "; its log ends:\n"
                        + log);
            }
            try {
                HttpRequest request = HttpRequest.newBuilder(URI.create(member.clientUrl() + "/health"))
                        .timeout(Duration.ofSeconds(1)).GET().build();
                HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
                return response.statusCode() == 200 && response.body().contains("\"true\"");
            }
            catch (IOException notYet) {
                return false;
            }
            catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("Interrupted while starting " + member, ex);
            }
        });
    }

    private void stop(Member member) {
        Process process = member.process;
        if (process == null) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
            }
        }
        catch (InterruptedException ex) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        awaitExit(member, process);
    }

    private void awaitExit(Member member, Process process) {
        try {
            if (!process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException(member + " (pid " + process.pid() + ") is still alive "
                        + STOP_TIMEOUT.toSeconds() + " s after SIGKILL");
            }
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while waiting for " + member + " to exit", ex);
        }
        member.process = null;
    }

    private void stopAll() {
        // SIGKILL: the data is deleted next, and members stopped with SIGTERM side by side took 7 s here (each leader
        // in turn tries to hand its leadership to a peer that is stopping too)
        members.stream().map(member -> member.process).filter(p -> p != null).forEach(Process::destroyForcibly);
        for (Member member : members) {
            Process process = member.process;
            if (process == null) {
                continue;
            }
            try {
                process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            }
            catch (InterruptedException ex) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
            member.process = null;
        }
    }

    /** What each member reports, for timeout messages: which one did not converge is the question then. */
    private String describe() {
        StringBuilder text = new StringBuilder();
        for (Member member : members) {
            text.append("\n  ").append(member).append(": ");
            if (!isRunning(member.index)) {
                text.append("not running");
                continue;
            }
            try {
                String status = status(member);
                text.append("id ").append(field(MEMBER_ID, status).orElse("?"))
                        .append(", leader ").append(field(LEADER, status).orElse("none"))
                        .append(", term ").append(field(RAFT_TERM, status).orElse("?"));
            }
            catch (RuntimeException ex) {
                text.append(ex.getMessage());
            }
        }
        return text.toString();
    }

    private static String logTail(Member member) {
        try {
            List<String> lines = Files.readAllLines(member.log());
            return String.join("\n", lines.subList(Math.max(0, lines.size() - LOG_TAIL_LINES), lines.size()));
        }
        catch (IOException | UncheckedIOException ex) {
            return "(no log: " + ex.getMessage() + ")";
        }
    }

    private static Optional<String> field(Pattern pattern, String json) {
        Matcher matcher = pattern.matcher(json);
        return matcher.find() ? Optional.of(matcher.group(1)) : Optional.empty();
    }

    private Member member(int i) {
        if (i < 0 || i >= members.size()) {
            throw new IllegalArgumentException("Member index " + i + " is not in 0.." + (members.size() - 1)
                    + " of " + this);
        }
        return members.get(i);
    }

    private static void deleteRecursively(Path directory) {
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
        catch (IOException ex) {
            // a leftover temp directory is no reason to fail a test
        }
    }

    /** One member: fixed for the cluster's life except its process, and its raft id once known. */
    private static final class Member {

        final int index;
        final String name;
        final int clientPort;
        final int peerPort;
        final Path directory;
        List<String> command;
        volatile String id;
        volatile Process process;

        Member(int index, String name, int clientPort, int peerPort, Path directory) {
            this.index = index;
            this.name = name;
            this.clientPort = clientPort;
            this.peerPort = peerPort;
            this.directory = directory;
        }

        String clientUrl() {
            return "http://127.0.0.1:" + clientPort;
        }

        String peerUrl() {
            return "http://127.0.0.1:" + peerPort;
        }

        Path log() {
            return directory.resolve("etcd.log");
        }

        @Override
        public String toString() {
            return "etcd " + name + " " + clientUrl();
        }
    }

    /** A member could not bind a port picked as free (taken between the check and the start): try others. */
    private static final class PortTakenException extends Poll.GiveUp {
        PortTakenException(String log) {
            super(log);
        }
    }

    /** A member exited while it was awaited: no use waiting on. */
    private static final class DeadMemberException extends Poll.GiveUp {
        DeadMemberException(String message) {
            super(message);
        }
    }
}

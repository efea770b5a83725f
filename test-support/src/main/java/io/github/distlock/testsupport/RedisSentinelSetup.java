package io.github.distlock.testsupport;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

/**
 * A real Redis Sentinel set-up on free loopback ports: a master, one replica, and three sentinels that monitor the
 * master with a quorum of 2.
 *
 * <pre>{@code
 * try (RedisSentinelSetup redis = RedisSentinelSetup.start()) {
 *     // spring.data.redis.sentinel.master = redis.masterName()
 *     // spring.data.redis.sentinel.nodes  = String.join(",", redis.sentinelAddresses())
 *     redis.killMaster();
 *     RedisServer promoted = redis.awaitNewMaster(Duration.ofSeconds(15));
 * }
 * }</pre>
 *
 * <p>The sentinels consider the master down after {@link #DOWN_AFTER} (1 s) without an answer, instead of the default's
 * 30 s, so a killed master is replaced within a few seconds. Each sentinel has its own configuration file in its own
 * directory, because a sentinel rewrites its file whenever its view changes; {@link #close()} deletes them all.
 *
 * <p>{@link #master()} and {@link #replica()} are the servers as started; after a failover the roles are swapped and
 * {@link #currentMaster()} says which is which.
 */
public final class RedisSentinelSetup implements AutoCloseable {

    /** The master name the sentinels monitor, unless {@link #start(String)} names another. */
    public static final String DEFAULT_MASTER_NAME = "distlock";

    /** The sentinels' {@code down-after-milliseconds}: how long the master may be silent before it counts as down. */
    public static final Duration DOWN_AFTER = Duration.ofMillis(1000);

    /**
     * The sentinels' {@code failover-timeout}: bounds a failover's steps, and a failed attempt (a split vote) is retried
     * after twice this. The default's 3 minutes would let one unlucky election stall a test for 6.
     */
    private static final Duration FAILOVER_TIMEOUT = Duration.ofMillis(2000);
    private static final int SENTINELS = 3;
    private static final String HELLO_CHANNEL = "__sentinel__:hello";
    private static final int QUORUM = 2;
    /** Sentinels find each other through hello messages published every 2 s: a few rounds is plenty. */
    private static final Duration DISCOVERY_TIMEOUT = Duration.ofSeconds(20);

    private final String masterName;
    private final RedisServer master;
    private final RedisServer replica;
    private final List<RedisServer> sentinels;
    /** The master when {@link #killMaster()} or {@link #failover()} was last called: the one to be replaced. */
    private volatile RedisServer replacedMaster;

    private RedisSentinelSetup(String masterName, RedisServer master, RedisServer replica, List<RedisServer> sentinels) {
        this.masterName = masterName;
        this.master = master;
        this.replica = replica;
        this.sentinels = List.copyOf(sentinels);
    }

    /** Starts a set-up whose sentinels monitor the master as {@value #DEFAULT_MASTER_NAME}. */
    public static RedisSentinelSetup start() {
        return start(DEFAULT_MASTER_NAME);
    }

    /**
     * Starts the master, then the replica, then the three sentinels, and waits until every sentinel knows the master,
     * the two other sentinels, and the replica well enough to promote it (what a client asking a sentinel for the
     * set-up expects, and what a failover needs: the quorum is counted among known sentinels).
     *
     * @param masterName the name the sentinels monitor the master under
     * @return the running set-up
     */
    public static RedisSentinelSetup start(String masterName) {
        List<RedisServer> started = new ArrayList<>();
        try {
            // diskless replication without delay: a replica (the first, or a former master rejoining) syncs at once
            List<String> replication = List.of("--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0");
            RedisServer master = RedisServer.start(new RedisServer.Options(replication, null, false, Ports::freePort));
            started.add(master);
            List<String> replicaArguments = new ArrayList<>(replication);
            replicaArguments.addAll(List.of("--replicaof", master.host(), Integer.toString(master.port())));
            RedisServer replica = RedisServer.start(
                    new RedisServer.Options(replicaArguments, null, false, Ports::freePort));
            started.add(replica);
            // a sentinel learns of replicas from the master's INFO, asked on connecting and then every 10 s: the
            // replica must be attached before the sentinels start, or they would not see it for 10 s
            Poll.untilTrue(Duration.ofSeconds(10), () -> "the replica " + replica + " to sync with " + master,
                    () -> "up".equals(field(RespClient.callOnce(replica.port(), "INFO", "replication"),
                            "master_link_status")));

            String config = "sentinel monitor " + masterName + " " + master.host() + " " + master.port() + " " + QUORUM
                    + "\nsentinel down-after-milliseconds " + masterName + " " + DOWN_AFTER.toMillis()
                    + "\nsentinel failover-timeout " + masterName + " " + FAILOVER_TIMEOUT.toMillis()
                    + "\nsentinel parallel-syncs " + masterName + " 1\n";
            RedisServer.Options sentinelOptions = new RedisServer.Options(List.of(), config, true, Ports::freePort);
            List<RedisServer> sentinels = Servers.startAll(SENTINELS, sentinelOptions, "sentinels");
            started.addAll(sentinels);
            RedisSentinelSetup setup = new RedisSentinelSetup(masterName, master, replica, sentinels);
            setup.awaitDiscovery();
            return setup;
        }
        catch (RuntimeException ex) {
            started.forEach(RedisServer::close);
            throw ex;
        }
    }

    /** The name the sentinels monitor the master under ({@code spring.data.redis.sentinel.master}). */
    public String masterName() {
        return masterName;
    }

    /** Every sentinel as {@code 127.0.0.1:port}, as {@code spring.data.redis.sentinel.nodes} takes them. */
    public List<String> sentinelAddresses() {
        return sentinels.stream().map(RedisServer::address).toList();
    }

    /** Every sentinel as {@code redis://127.0.0.1:port}, as Redisson's {@code addSentinelAddress} takes them. */
    public List<String> sentinelUris() {
        return sentinels.stream().map(RedisServer::uri).toList();
    }

    /** The three sentinel processes. */
    public List<RedisServer> sentinels() {
        return sentinels;
    }

    /** The server started as the master (after a failover, a replica or dead: see {@link #currentMaster()}). */
    public RedisServer master() {
        return master;
    }

    /** The server started as the replica (after a failover, the master: see {@link #currentMaster()}). */
    public RedisServer replica() {
        return replica;
    }

    /** The master as the first running sentinel reports it now ({@code SENTINEL get-master-addr-by-name}). */
    public RedisServer currentMaster() {
        RedisServer sentinel = sentinels.stream().filter(RedisServer::isRunning).findFirst()
                .orElseThrow(() -> new IllegalStateException("No sentinel is running"));
        return serverOnPort(reportedMasterPort(sentinel));
    }

    /**
     * Kills the current master with {@code SIGKILL}; the sentinels notice after {@link #DOWN_AFTER}, agree, and promote
     * the replica. Its directory stays until {@link #close()}, so {@code restart()} on the returned server brings it back:
     * empty, and a master accepting writes until a sentinel turns it into a replica of the new master, measured about
     * 10 s later. Under load, with the short {@link #DOWN_AFTER}, the sentinels were seen to fail over once more, to the
     * restarted empty server: what was written before the first failover was then gone.
     *
     * @return the server that was killed
     */
    public RedisServer killMaster() {
        RedisServer current = currentMaster();
        replacedMaster = current;
        current.kill();
        return current;
    }

    /**
     * Asks a sentinel for a failover without any failure ({@code SENTINEL FAILOVER}): the replica is promoted in about
     * 1 s. Follow with {@link #awaitNewMaster(Duration)}.
     *
     * <p>The old master, alive, goes on being a master that accepts writes until a sentinel converts it into a replica
     * of the new one: measured about 11 s later (Redis waits 8 s, then for its next INFO round). A client still
     * connected to it writes to the wrong master for that long.
     *
     * @throws RespClient.ServerError when the sentinel refuses, e.g. {@code NOGOODSLAVE} or {@code INPROG}
     */
    public void failover() {
        RedisServer current = currentMaster();
        replacedMaster = current;
        RedisServer sentinel = sentinels.stream().filter(RedisServer::isRunning).findFirst().orElseThrow();
        RespClient.callOnce(sentinel.port(), "SENTINEL", "FAILOVER", masterName);
    }

    /**
     * Waits until every running sentinel reports a master other than the one {@link #killMaster()} killed or
     * {@link #failover()} replaced, the same one, and that server reports itself master.
     *
     * @param timeout how long to wait; a killed master is replaced in about 3 to 5 s, a {@code SENTINEL FAILOVER}
     *        takes about 1 s
     * @return the new master
     * @throws IllegalStateException when nothing was killed or failed over, or the timeout passes first
     */
    public RedisServer awaitNewMaster(Duration timeout) {
        RedisServer replaced = replacedMaster;
        if (replaced == null) {
            throw new IllegalStateException("Call killMaster() or failover() first: there is no master to replace");
        }
        return Poll.until(timeout, () -> "the sentinels to report a master other than " + replaced + ": "
                + describe(), () -> {
                    Set<Integer> reported = new HashSet<>();
                    for (RedisServer sentinel : sentinels) {
                        if (sentinel.isRunning()) {
                            reported.add(reportedMasterPort(sentinel));
                        }
                    }
                    if (reported.size() != 1 || reported.contains(replaced.port())) {
                        return Optional.empty();
                    }
                    RedisServer candidate = serverOnPort(reported.iterator().next());
                    Object role = ((List<?>) RespClient.callOnce(candidate.port(), "ROLE")).get(0);
                    return "master".equals(role) ? Optional.of(candidate) : Optional.empty();
                });
    }


    /** Stops the sentinels, the replica and the master, and deletes their directories. */
    @Override
    public void close() {
        List<RedisServer> all = new ArrayList<>(sentinels);
        all.add(replica);
        all.add(master);
        // SIGTERM to all first, so they shut down side by side instead of one after the other
        all.forEach(RedisServer::signalStop);
        all.forEach(RedisServer::close);
    }

    @Override
    public String toString() {
        return "RedisSentinelSetup " + masterName + " master " + master.address() + " replica " + replica.address()
                + " sentinels " + sentinelAddresses();
    }

    private void awaitDiscovery() {
        introduceSentinels();
        Poll.untilTrue(DISCOVERY_TIMEOUT, () -> "every sentinel to know the replica and the other sentinels: "
                + describe(), () -> sentinels.stream().allMatch(sentinel -> {
                    List<?> others = (List<?>) RespClient.callOnce(sentinel.port(), "SENTINEL", "SENTINELS", masterName);
                    List<?> replicas = (List<?>) RespClient.callOnce(sentinel.port(), "SENTINEL", "REPLICAS", masterName);
                    return others.size() == SENTINELS - 1 && replicas.size() == 1
                            && isPromotable(fields((List<?>) replicas.get(0)))
                            && reportedMasterPort(sentinel) == master.port();
                }));
    }

    /**
     * Sentinels find each other through hello messages each publishes on the master's {@code __sentinel__:hello}
     * channel every 2 s, the first one 2 s after connecting. Publishing each sentinel's hello once, in its own format
     * and with what it would say itself (fresh sentinels are at epoch 0), spares that wait; the sentinels' own hellos
     * follow and say the same. Should this not work, discovery just takes its natural 2 s.
     */
    private void introduceSentinels() {
        try (RespClient client = RespClient.connect(master.port())) {
            Poll.untilTrue(Duration.ofSeconds(2), () -> "the sentinels to subscribe to hellos on " + master,
                    () -> ((List<?>) client.call("PUBSUB", "NUMSUB", HELLO_CHANNEL)).get(1).equals((long) SENTINELS));
            for (RedisServer sentinel : sentinels) {
                String id = RespClient.callOnce(sentinel.port(), "SENTINEL", "MYID").toString();
                // ip,port,runid,current_epoch,master_name,master_ip,master_port,master_config_epoch
                String hello = String.join(",", sentinel.host(), Integer.toString(sentinel.port()), id, "0",
                        masterName, master.host(), Integer.toString(master.port()), "0");
                client.call("PUBLISH", HELLO_CHANNEL, hello);
            }
        }
        catch (RuntimeException ex) {
            // only a shortcut: awaitDiscovery() waits for the sentinels' own hellos then
        }
    }

    /**
     * Whether a sentinel would pick this replica for a failover. It learns of a replica from the master's INFO but
     * trusts it only once the replica's own INFO came back (until then {@code SENTINEL FAILOVER} answers
     * {@code NOGOODSLAVE}).
     */
    private static boolean isPromotable(Map<String, String> replica) {
        return "slave".equals(replica.get("flags")) && "ok".equals(replica.get("master-link-status"))
                && Long.parseLong(replica.getOrDefault("info-refresh", "0")) < 5_000
                && !"0".equals(replica.get("slave-priority"));
    }

    /** A flat {@code [name, value, name, value, ...]} reply, as {@code SENTINEL REPLICAS} gives each replica. */
    private static Map<String, String> fields(List<?> flat) {
        Map<String, String> fields = new HashMap<>();
        for (int i = 0; i + 1 < flat.size(); i += 2) {
            fields.put(flat.get(i).toString(), String.valueOf(flat.get(i + 1)));
        }
        return fields;
    }

    private int reportedMasterPort(RedisServer sentinel) {
        List<?> address = (List<?>) RespClient.callOnce(sentinel.port(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME",
                masterName);
        if (address == null) {
            throw new IllegalStateException(sentinel + " does not monitor " + masterName);
        }
        return Integer.parseInt(address.get(1).toString());
    }

    private RedisServer serverOnPort(int port) {
        return Stream.of(master, replica).filter(server -> server.port() == port).findFirst()
                .orElseThrow(() -> new IllegalStateException("A sentinel reports a master on port " + port
                        + ", which is neither " + master + " nor " + replica));
    }

    /** What each sentinel reports, for timeout messages. */
    private String describe() {
        StringBuilder text = new StringBuilder();
        for (RedisServer sentinel : sentinels) {
            text.append("\n  sentinel ").append(sentinel.address()).append(": ");
            if (!sentinel.isRunning()) {
                text.append("not running");
                continue;
            }
            try {
                text.append("master port ").append(reportedMasterPort(sentinel))
                        .append(", knows ").append(((List<?>) RespClient.callOnce(sentinel.port(), "SENTINEL",
                                "SENTINELS", masterName)).size()).append(" other sentinels and ")
                        .append(((List<?>) RespClient.callOnce(sentinel.port(), "SENTINEL", "REPLICAS", masterName))
                                .size()).append(" replicas");
            }
            catch (RuntimeException ex) {
                text.append(ex.getMessage());
            }
        }
        return text.toString();
    }

    private static String field(Object info, String name) {
        for (String line : info.toString().split("\r?\n")) {
            if (line.startsWith(name + ":")) {
                return line.substring(name.length() + 1);
            }
        }
        return null;
    }
}

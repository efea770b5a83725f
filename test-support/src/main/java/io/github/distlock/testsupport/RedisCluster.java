package io.github.distlock.testsupport;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * A real Redis Cluster on free loopback ports: by default 3 masters with one replica each, all 16384 slots assigned.
 *
 * <pre>{@code
 * try (RedisCluster cluster = RedisCluster.start()) {
 *     // spring.data.redis.cluster.nodes = String.join(",", cluster.nodeAddresses())
 *     RedisCluster.Node master = cluster.masterForKey("lock:order:42");
 *     cluster.kill(master);
 *     RedisCluster.Node promoted = cluster.awaitFailover(master, Duration.ofSeconds(15));
 * }
 * }</pre>
 *
 * <p>The cluster is built the way {@code redis-cli --cluster create} builds one (the shipped binary comes without
 * {@code redis-cli}): each node gets a distinct config epoch, the masters take even shares of the slots, the nodes
 * meet, each replica replicates its master. Nodes run with {@code cluster-node-timeout} 1000 ms, so a killed master's
 * replica takes over within a few seconds rather than the default's tens of seconds; everything else is Redis's
 * default, including {@code cluster-require-full-coverage yes}: while a master is down and not yet replaced, the whole
 * cluster refuses commands, as a production cluster would.
 *
 * <p>Node ports are picked below the kernel's ephemeral port range with their cluster bus port (port + 10000) free as
 * well. Each node has its own directory (its {@code nodes.conf} included), deleted by {@link #close()}.
 */
public final class RedisCluster implements AutoCloseable {

    /** The number of hash slots of every Redis Cluster. */
    public static final int SLOTS = 16384;

    /** The {@code cluster-node-timeout} of every node: how long a node may be unreachable before it counts as failed. */
    public static final Duration NODE_TIMEOUT = Duration.ofMillis(1000);

    private static final Duration FORM_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration REJOIN_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration FAILOVER_TIMEOUT = Duration.ofSeconds(15);
    /** How long Redis pursues one manual failover (CLUSTER_MF_TIMEOUT) before it drops it. */
    private static final Duration MANUAL_FAILOVER_WINDOW = Duration.ofSeconds(5);

    private final List<Node> nodes;
    private final int masterCount;
    /** Slot ranges each master held when {@link #kill(Node)} killed it, by node id: what its successor must take. */
    private final Map<String, List<SlotRange>> slotsAtKill = new ConcurrentHashMap<>();

    private RedisCluster(List<Node> nodes, int masterCount) {
        this.nodes = List.copyOf(nodes);
        this.masterCount = masterCount;
    }

    /** Starts 3 masters with one replica each and waits until the cluster is {@code ok} and every replica synced. */
    public static RedisCluster start() {
        return start(3, 1);
    }

    /**
     * Starts a cluster and waits until every node reports {@code cluster_state:ok}, every node sees each replica as the
     * replica of its master, and every replica's link to its master is up.
     *
     * @param masters how many masters share the slots; a failover needs a majority of masters alive, so tests of
     *        failover want at least 3
     * @param replicasPerMaster how many replicas each master gets
     * @return the running cluster
     */
    public static RedisCluster start(int masters, int replicasPerMaster) {
        if (masters < 1 || replicasPerMaster < 0) {
            throw new IllegalArgumentException("Need at least one master and no negative replica count, got "
                    + masters + " masters and " + replicasPerMaster + " replicas per master");
        }
        int total = masters * (1 + replicasPerMaster);
        List<RedisServer> servers = startServers(total);
        try {
            List<Node> nodes = new ArrayList<>(total);
            for (RedisServer server : servers) {
                nodes.add(new Node(RespClient.callOnce(server.port(), "CLUSTER", "MYID").toString(), server));
            }
            RedisCluster cluster = new RedisCluster(nodes, masters);
            cluster.form(replicasPerMaster);
            return cluster;
        }
        catch (RuntimeException ex) {
            servers.forEach(RedisServer::close);
            throw ex;
        }
    }

    /** Every node started, masters first (in slot order), then the replicas (of master 0, 1, ... in turn). */
    public List<Node> nodes() {
        return nodes;
    }

    /** The running nodes that report themselves master now (after a failover, the promoted replica is one). */
    public List<Node> masters() {
        return runningNodes().stream().filter(node -> node.role().equals("master")).toList();
    }

    /** The running nodes that report themselves replica now. */
    public List<Node> replicas() {
        return runningNodes().stream().filter(node -> node.role().equals("slave")).toList();
    }

    /**
     * The master that serves a slot, as the first running node sees the cluster now.
     *
     * @param slot a slot number, 0 to 16383
     * @return the node that owns it
     * @throws IllegalStateException when no node owns it (a master died and was not replaced)
     */
    public Node masterForSlot(int slot) {
        if (slot < 0 || slot >= SLOTS) {
            throw new IllegalArgumentException("Slot " + slot + " is not in 0.." + (SLOTS - 1));
        }
        Node observer = runningNodes().get(0);
        return slotRanges(observer.port()).stream()
                .filter(range -> range.contains(slot))
                .findFirst()
                .map(range -> nodeOnPort(range.masterPort()))
                .orElseThrow(() -> new IllegalStateException("No master serves slot " + slot + " as "
                        + observer + " sees the cluster"));
    }

    /** Shortcut for {@code masterForSlot(slotOf(key))}. */
    public Node masterForKey(String key) {
        return masterForSlot(slotOf(key));
    }

    /**
     * The slot of a key, as Redis computes it: CRC16 (XMODEM) of the key's UTF-8 bytes modulo 16384, or of the part
     * between the first {@code {} and the next {@code }} when that part is not empty (a hash tag: {@code {user:1}:a}
     * and {@code {user:1}:b} share a slot).
     *
     * @param key the key
     * @return its slot, 0 to 16383
     */
    public static int slotOf(String key) {
        byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
        int start = 0;
        int end = bytes.length;
        int open = indexOf(bytes, (byte) '{', 0);
        if (open >= 0) {
            int close = indexOf(bytes, (byte) '}', open + 1);
            if (close > open + 1) {
                start = open + 1;
                end = close;
            }
        }
        return crc16(bytes, start, end) & (SLOTS - 1);
    }

    /** Every node as {@code 127.0.0.1:port}, as {@code spring.data.redis.cluster.nodes} takes them. */
    public List<String> nodeAddresses() {
        return nodes.stream().map(Node::address).toList();
    }

    /** Every node as {@code redis://127.0.0.1:port}, as Redisson's {@code addNodeAddress} takes them. */
    public List<String> nodeUris() {
        return nodes.stream().map(Node::uri).toList();
    }

    /**
     * Kills a node with {@code SIGKILL}: no goodbye to its peers, which notice it only by its silence, after
     * {@link #NODE_TIMEOUT}. Remembers the slots it served, for {@link #awaitFailover(Node, Duration)}.
     *
     * @param node one of this cluster's nodes
     */
    public void kill(Node node) {
        requireOwn(node);
        if (node.isRunning() && node.role().equals("master")) {
            List<SlotRange> owned = slotRanges(node.port()).stream()
                    .filter(range -> range.masterPort() == node.port())
                    .toList();
            slotsAtKill.put(node.id(), owned);
        }
        node.server().kill();
    }

    /**
     * Waits until a replica has taken over the slots of a master killed through {@link #kill(Node)}: every running node
     * reports {@code cluster_state:ok}, they all name the same masters for the same slots, and the owner of the killed
     * master's slots is another node, alive.
     *
     * @param killedMaster the master that was killed
     * @param timeout how long to wait; with the 1 s node timeout a failover takes about 2 to 3 s
     * @return the node that serves the killed master's slots now
     * @throws IllegalArgumentException when the node was not a master when {@link #kill(Node)} killed it
     * @throws IllegalStateException when the timeout passes first
     */
    public Node awaitFailover(Node killedMaster, Duration timeout) {
        requireOwn(killedMaster);
        List<SlotRange> slots = slotsAtKill.get(killedMaster.id());
        if (slots == null || slots.isEmpty()) {
            throw new IllegalArgumentException(killedMaster + " was not a master with slots when kill() killed it");
        }
        int slot = slots.get(0).start();
        return Poll.until(timeout, () -> "a replica to take over slot " + slot + " of " + killedMaster + ": "
                + describe(), () -> {
                    if (!isSettled()) {
                        return Optional.empty();
                    }
                    Node owner = masterForSlot(slot);
                    return owner.equals(killedMaster) || !owner.isRunning() ? Optional.empty() : Optional.of(owner);
                });
    }

    /**
     * The running nodes that report themselves replicas of a master now ({@code ROLE}): what {@link #failover(Node)}
     * takes to replace that master.
     *
     * @param master one of this cluster's nodes
     * @return its replicas, possibly none
     */
    public List<Node> replicasOf(Node master) {
        requireOwn(master);
        return runningNodes().stream()
                .filter(node -> {
                    List<?> role = (List<?>) RespClient.callOnce(node.port(), "ROLE");
                    return "slave".equals(role.get(0)) && ((Long) role.get(2)).intValue() == master.port();
                })
                .toList();
    }

    /**
     * A manual failover with no failure: {@code CLUSTER FAILOVER} sent to a replica, which waits until it has every
     * write its master acknowledged (the master holds its clients meanwhile), then takes over the master's slots; the
     * master becomes its replica. Waits first for the replica's link to its master (a manual failover needs it), then
     * until the replica reports itself master, the former master reports itself replica, every running node reports
     * {@code cluster_state:ok} and all name the same masters for the same slots.
     *
     * @param replica a running replica of this cluster
     * @return the node that was its master before
     * @throws IllegalArgumentException when the node is not a running replica
     * @throws IllegalStateException when the failover is not done within 15 s (an attempt that Redis drops, e.g. one
     *         right after another failover of the same slots, is sent again)
     */
    public Node failover(Node replica) {
        requireOwn(replica);
        if (!replica.isRunning()) {
            throw new IllegalArgumentException("RedisCluster.failover(replica): " + replica + " is not running");
        }
        List<?> role = (List<?>) RespClient.callOnce(replica.port(), "ROLE");
        if (!"slave".equals(role.get(0))) {
            throw new IllegalArgumentException("RedisCluster.failover(replica): " + replica + " is a " + role.get(0)
                    + ", not a replica");
        }
        Node master = nodeOnPort(((Long) role.get(2)).intValue());
        Poll.untilTrue(FAILOVER_TIMEOUT, () -> replica + " to be linked to its master " + master + ": " + describe(),
                () -> isLinkUp(replica));
        long deadline = System.nanoTime() + FAILOVER_TIMEOUT.toNanos();
        // the first attempt is resent once the votes refused to it can be given again; later ones get Redis's window
        Duration window = NODE_TIMEOUT.multipliedBy(2).plusMillis(500);
        while (true) {
            RespClient.callOnce(replica.port(), "CLUSTER", "FAILOVER");
            Duration left = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
            Duration wait = left.compareTo(window) < 0 ? left : window;
            window = MANUAL_FAILOVER_WINDOW;
            try {
                Poll.untilTrue(wait,
                        () -> replica + " to take over from " + master + ": " + describe(),
                        () -> replica.role().equals("master")
                                && (!master.isRunning() || master.role().equals("slave"))
                                && isSettled());
                return master;
            }
            catch (IllegalStateException notYet) {
                // a master votes for no replica of the same master twice within two node timeouts: a failover
                // right after another one is refused, and Redis gives a manual failover 5 s before it drops it
                if (System.nanoTime() - deadline > 0) {
                    throw notYet;
                }
            }
        }
    }

    /**
     * Waits until every running node reports {@code cluster_state:ok} and they all name the same masters for the same
     * slots (after a failover or a restart, a node may be ok but still believe in an old owner for a moment).
     *
     * @param timeout how long to wait
     * @throws IllegalStateException when the timeout passes first
     */
    public void awaitClusterOk(Duration timeout) {
        Poll.untilTrue(timeout, () -> "cluster_state:ok and one slot map on every running node: " + describe(),
                this::isSettled);
    }

    /**
     * Starts a killed or stopped node again on its port with its {@code nodes.conf}, and waits until it has rejoined:
     * every running node, itself included, reports {@code cluster_state:ok} and no longer flags it as failed, and, when
     * it comes back as a replica, its link to its master is up (it has synced: it can be failed over to). A master
     * whose slots a replica took over in the meantime comes back as that replica's replica.
     *
     * @param node one of this cluster's nodes (a running one is stopped first)
     */
    public void restart(Node node) {
        requireOwn(node);
        node.server().restart();
        Poll.untilTrue(REJOIN_TIMEOUT, () -> node + " to rejoin: " + describe(), () -> {
            if (!isSettled()) {
                return false;
            }
            for (Node observer : runningNodes()) {
                boolean seenFailing = clusterNodes(observer.port()).stream()
                        .anyMatch(view -> view.id().equals(node.id())
                                && (view.flags().contains("fail") || view.flags().contains("fail?")
                                        || !view.linkState().equals("connected")));
                if (seenFailing) {
                    return false;
                }
            }
            return node.role().equals("master") || isLinkUp(node);
        });
    }

    /** Stops every node and deletes their directories. */
    @Override
    public void close() {
        // SIGTERM to all first, so they shut down side by side instead of one after the other
        nodes.forEach(node -> node.server().signalStop());
        nodes.forEach(node -> node.server().close());
    }

    @Override
    public String toString() {
        return "RedisCluster " + nodeAddresses();
    }

    /** One node of the cluster: its id (stable for its life, across restarts) and its server process. */
    public record Node(String id, RedisServer server) {

        /** The node's port; its cluster bus listens on this + 10000. */
        public int port() {
            return server.port();
        }

        /** {@code 127.0.0.1:port}. */
        public String address() {
            return server.address();
        }

        /** {@code redis://127.0.0.1:port}. */
        public String uri() {
            return server.uri();
        }

        /** Whether the node's process is alive. */
        public boolean isRunning() {
            return server.isRunning();
        }

        /** The role the node reports for itself now: {@code master} or {@code slave}. */
        public String role() {
            Object reply = RespClient.callOnce(port(), "ROLE");
            return ((List<?>) reply).get(0).toString();
        }

        @Override
        public String toString() {
            return "node " + address() + " (" + id.substring(0, 8) + ")";
        }
    }

    private void form(int replicasPerMaster) {
        for (int i = 0; i < nodes.size(); i++) {
            // distinct epochs up front spare the nodes the slow collision resolution of equal ones (redis-cli does this)
            RespClient.callOnce(nodes.get(i).port(), "CLUSTER", "SET-CONFIG-EPOCH", Integer.toString(i + 1));
        }
        for (int m = 0; m < masterCount; m++) {
            int from = m * SLOTS / masterCount;
            int to = (m + 1) * SLOTS / masterCount;
            List<String> command = new ArrayList<>(List.of("CLUSTER", "ADDSLOTS"));
            // 6.2 has no ADDSLOTSRANGE; one command with a few thousand slot numbers is well within its limits
            IntStream.range(from, to).mapToObj(Integer::toString).forEach(command::add);
            try (RespClient master = RespClient.connect(nodes.get(m).port())) {
                master.call(command);
            }
        }
        Node first = nodes.get(0);
        try (RespClient client = RespClient.connect(first.port())) {
            for (Node other : nodes.subList(1, nodes.size())) {
                client.call("CLUSTER", "MEET", "127.0.0.1", Integer.toString(other.port()));
            }
        }
        Set<String> ids = nodes.stream().map(Node::id).collect(Collectors.toSet());
        // CLUSTER REPLICATE needs the master known by id: wait until the handshakes are done everywhere
        Poll.untilTrue(FORM_TIMEOUT, () -> "every node to know every other: " + describe(),
                () -> nodes.stream().allMatch(node -> {
                    List<NodeView> views = clusterNodes(node.port());
                    return views.stream().map(NodeView::id).collect(Collectors.toSet()).equals(ids)
                            && views.stream().noneMatch(view -> view.flags().contains("handshake")
                                    || view.flags().contains("noaddr"));
                }));
        Map<String, String> masterOfReplica = new ConcurrentHashMap<>();
        for (int r = 0; r < masterCount * replicasPerMaster; r++) {
            Node replica = nodes.get(masterCount + r);
            Node master = nodes.get(r % masterCount);
            RespClient.callOnce(replica.port(), "CLUSTER", "REPLICATE", master.id());
            masterOfReplica.put(replica.id(), master.id());
        }
        Poll.untilTrue(FORM_TIMEOUT, () -> "the cluster to form: " + describe(), () -> nodes.stream().allMatch(node -> {
            if (!isClusterOk(node)) {
                return false;
            }
            Map<String, String> info = info(node.port(), "CLUSTER", "INFO");
            if (!info.get("cluster_slots_ok").equals(Integer.toString(SLOTS))
                    || !info.get("cluster_known_nodes").equals(Integer.toString(nodes.size()))) {
                return false;
            }
            boolean replicasKnown = clusterNodes(node.port()).stream()
                    .filter(view -> masterOfReplica.containsKey(view.id()))
                    .allMatch(view -> view.flags().contains("slave")
                            && view.masterId().equals(masterOfReplica.get(view.id())));
            return replicasKnown && (!masterOfReplica.containsKey(node.id())
                    || "up".equals(info(node.port(), "INFO", "replication").get("master_link_status")));
        }));
    }

    private static List<RedisServer> startServers(int count) {
        RedisServer.Options options = new RedisServer.Options(List.of(
                "--cluster-enabled", "yes",
                // relative to the node's own --dir
                "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", Long.toString(NODE_TIMEOUT.toMillis()),
                // a replica syncs straight from memory at once, instead of a 5 s wait or an RDB file on disk
                "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"),
                null, false, Ports::freeClusterPort);
        return Servers.startAll(count, options, "cluster nodes");
    }

    private List<Node> runningNodes() {
        List<Node> running = nodes.stream().filter(Node::isRunning).toList();
        if (running.isEmpty()) {
            throw new IllegalStateException("No node of the cluster is running");
        }
        return running;
    }

    private Node nodeOnPort(int port) {
        return nodes.stream().filter(node -> node.port() == port).findFirst()
                .orElseThrow(() -> new IllegalStateException("No node of this cluster on port " + port));
    }

    private void requireOwn(Node node) {
        if (!nodes.contains(node)) {
            throw new IllegalArgumentException(node + " is not a node of " + this);
        }
    }

    private boolean isSettled() {
        Set<List<SlotRange>> slotMaps = new HashSet<>();
        for (Node node : runningNodes()) {
            if (!isClusterOk(node)) {
                return false;
            }
            slotMaps.add(slotRanges(node.port()).stream()
                    .sorted(Comparator.comparingInt(SlotRange::start)).toList());
        }
        return slotMaps.size() == 1;
    }

    private static boolean isLinkUp(Node replica) {
        return "up".equals(info(replica.port(), "INFO", "replication").get("master_link_status"));
    }

    private static boolean isClusterOk(Node node) {
        return "ok".equals(info(node.port(), "CLUSTER", "INFO").get("cluster_state"));
    }

    /** The nodes as each running node sees them, for timeout messages: what did not converge is the question then. */
    private String describe() {
        StringBuilder text = new StringBuilder();
        for (Node node : nodes) {
            text.append("\n  ").append(node).append(": ");
            if (!node.isRunning()) {
                text.append("not running");
                continue;
            }
            try {
                text.append("cluster_state:").append(info(node.port(), "CLUSTER", "INFO").get("cluster_state"));
                for (NodeView view : clusterNodes(node.port())) {
                    text.append("\n    ").append(view.port()).append(' ').append(view.flags())
                            .append(" link:").append(view.linkState()).append(" slots:").append(view.slotCount());
                }
            }
            catch (RuntimeException ex) {
                text.append(ex.getMessage());
            }
        }
        return text.toString();
    }

    private static Map<String, String> info(int port, String... command) {
        String text = RespClient.callOnce(port, command).toString();
        return Arrays.stream(text.split("\r?\n"))
                .filter(line -> line.contains(":") && !line.startsWith("#"))
                .collect(Collectors.toMap(line -> line.substring(0, line.indexOf(':')),
                        line -> line.substring(line.indexOf(':') + 1), (a, b) -> b));
    }

    private static List<NodeView> clusterNodes(int port) {
        String text = RespClient.callOnce(port, "CLUSTER", "NODES").toString();
        return Arrays.stream(text.split("\n")).filter(line -> !line.isBlank()).map(NodeView::parse).toList();
    }

    private static List<SlotRange> slotRanges(int port) {
        List<SlotRange> ranges = new ArrayList<>();
        for (Object entry : (List<?>) RespClient.callOnce(port, "CLUSTER", "SLOTS")) {
            List<?> range = (List<?>) entry;
            List<?> master = (List<?>) range.get(2);
            ranges.add(new SlotRange(((Long) range.get(0)).intValue(), ((Long) range.get(1)).intValue(),
                    ((Long) master.get(1)).intValue()));
        }
        return ranges;
    }

    private static int indexOf(byte[] bytes, byte wanted, int from) {
        for (int i = from; i < bytes.length; i++) {
            if (bytes[i] == wanted) {
                return i;
            }
        }
        return -1;
    }

    /** CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, as in Redis's crc16.c. */
    private static int crc16(byte[] bytes, int from, int to) {
        int crc = 0;
        for (int i = from; i < to; i++) {
            crc ^= (bytes[i] & 0xFF) << 8;
            for (int bit = 0; bit < 8; bit++) {
                crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
            }
        }
        return crc & 0xFFFF;
    }

    /** Slots {@code start..end} (inclusive) served by the master on {@code masterPort}, from {@code CLUSTER SLOTS}. */
    private record SlotRange(int start, int end, int masterPort) {

        boolean contains(int slot) {
            return slot >= start && slot <= end;
        }
    }

    /** One line of {@code CLUSTER NODES}: how one node sees another (or itself, flagged {@code myself}). */
    private record NodeView(String id, int port, Set<String> flags, String masterId, String linkState, int slotCount) {

        static NodeView parse(String line) {
            // <id> <ip:port@cport> <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link-state> <slot>...
            String[] fields = line.trim().split(" ");
            String address = fields[1];
            int port = Integer.parseInt(address.substring(address.lastIndexOf(':') + 1, address.indexOf('@')));
            int slots = 0;
            for (int i = 8; i < fields.length; i++) {
                if (fields[i].startsWith("[")) {
                    continue; // a slot being migrated or imported
                }
                int dash = fields[i].indexOf('-');
                slots += dash < 0 ? 1
                        : Integer.parseInt(fields[i].substring(dash + 1)) - Integer.parseInt(fields[i].substring(0, dash)) + 1;
            }
            return new NodeView(fields[0], port, Set.of(fields[2].split(",")), fields[3], fields[7], slots);
        }
    }
}

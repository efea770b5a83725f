package io.github.distlock.testsupport;

import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.github.distlock.testsupport.RedisCluster.Node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RedisClusterTest {

    @RegisterExtension
    static final RedisClusterExtension shared = new RedisClusterExtension();

    @Test
    void formsThreeMastersWithOneReplicaEachCoveringAllSlots() {
        RedisCluster cluster = shared.cluster();
        assertThat(cluster.nodes()).hasSize(6);
        assertThat(cluster.masters()).hasSize(3);
        assertThat(cluster.replicas()).hasSize(3);
        assertThat(cluster.nodeAddresses()).allSatisfy(address -> assertThat(address).startsWith("127.0.0.1:"));
        assertThat(cluster.nodes()).allSatisfy(node -> assertThat(node.port()).isLessThan(55_535));

        for (Node node : cluster.nodes()) {
            String info = (String) RespClient.callOnce(node.port(), "CLUSTER", "INFO");
            assertThat(info).contains("cluster_state:ok", "cluster_slots_assigned:16384", "cluster_slots_ok:16384",
                    "cluster_known_nodes:6", "cluster_size:3");
        }
        // each master has exactly one replica, and every replica follows a different master
        Set<Integer> masterPorts = cluster.masters().stream().map(Node::port).collect(Collectors.toSet());
        Set<Long> followed = cluster.replicas().stream()
                .map(replica -> (Long) ((List<?>) RespClient.callOnce(replica.port(), "ROLE")).get(2))
                .collect(Collectors.toSet());
        assertThat(followed).hasSize(3);
        assertThat(followed.stream().map(Long::intValue).collect(Collectors.toSet())).isEqualTo(masterPorts);
        // every slot is served by one of the masters
        assertThat(List.of(0, 5460, 5461, 10922, 10923, 16383))
                .allSatisfy(slot -> assertThat(masterPorts).contains(cluster.masterForSlot(slot).port()));
    }

    @Test
    void keyWrittenThroughItsMasterIsReadAndOtherMastersRedirectToIt() {
        RedisCluster cluster = shared.cluster();
        String key = "distlock:{order:42}:lock";
        Node master = cluster.masterForKey(key);

        try (RespClient client = RespClient.connect(master.port())) {
            assertThat(client.call("SET", key, "holder-1")).isEqualTo("OK");
            assertThat(client.call("GET", key)).isEqualTo("holder-1");
        }
        Node other = cluster.masters().stream().filter(node -> !node.equals(master)).findFirst().orElseThrow();
        assertThatThrownBy(() -> RespClient.callOnce(other.port(), "GET", key))
                .isInstanceOf(RespClient.ServerError.class)
                .hasMessage("MOVED " + RedisCluster.slotOf(key) + " " + master.address());
    }

    @Test
    void slotOfMatchesClusterKeyslotIncludingHashTags() {
        List<String> keys = List.of("", "foo", "user:1000", "{user1000}.following", "{user1000}.followers",
                "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{}", "a{b", "a}b{c}", "sch\u00f6n:\u9501",
                "redisson_lock_token:{orders:lock:42}", "distlock:{order:42}:lock");
        try (RespClient client = RespClient.connect(shared.cluster().nodes().get(0).port())) {
            Map<String, Integer> expected = keys.stream().collect(Collectors.toMap(key -> key,
                    key -> ((Long) client.call("CLUSTER", "KEYSLOT", key)).intValue()));
            assertThat(keys).allSatisfy(key -> assertThat(RedisCluster.slotOf(key)).as(key).isEqualTo(expected.get(key)));
        }
        assertThat(RedisCluster.slotOf("{user1000}.following")).isEqualTo(RedisCluster.slotOf("{user1000}.followers"));
    }

    @Test
    void slotOfMatchesClusterKeyslotForRandomKeysWithBraces() {
        // a fixed seed: a mismatch must be reproducible
        Random random = new Random(42);
        String alphabet = "ab{}:\u00e9";
        try (RespClient client = RespClient.connect(shared.cluster().nodes().get(0).port())) {
            for (int i = 0; i < 500; i++) {
                StringBuilder key = new StringBuilder();
                for (int length = random.nextInt(12); length > 0; length--) {
                    key.append(alphabet.charAt(random.nextInt(alphabet.length())));
                }
                long expected = (Long) client.call("CLUSTER", "KEYSLOT", key.toString());
                assertThat(RedisCluster.slotOf(key.toString())).as(key.toString()).isEqualTo((int) expected);
            }
        }
    }

    @Test
    void manualFailoverSwapsMasterAndReplicaWithoutLosingAnAcknowledgedWriteAndCanBeUndone() {
        RedisCluster cluster = shared.cluster();
        String key = "payment:{failover}";
        Node master = cluster.masterForKey(key);
        List<Node> replicas = cluster.replicasOf(master);
        assertThat(replicas).hasSize(1);
        Node replica = replicas.get(0);
        // no WAIT: a manual failover itself lets the replica catch up with every write its master acknowledged
        assertThat(RespClient.callOnce(master.port(), "SET", key, "captured")).isEqualTo("OK");

        long failoverAt = System.nanoTime();
        Node previous = cluster.failover(replica);
        System.out.printf("CLUSTER FAILOVER -> replica master and cluster_state:ok in %d ms%n", millisSince(failoverAt));
        try {
            assertThat(previous).isEqualTo(master);
            assertThat(replica.role()).isEqualTo("master");
            assertThat(master.role()).isEqualTo("slave");
            assertThat(cluster.masterForKey(key)).isEqualTo(replica);
            assertThat(cluster.replicasOf(replica)).containsExactly(master);
            assertThat(RespClient.callOnce(replica.port(), "GET", key)).isEqualTo("captured");
            assertThatThrownBy(() -> cluster.failover(replica))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("RedisCluster.failover(replica): " + replica + " is a master, not a replica");
        }
        finally {
            // back as it was: the other tests share this cluster
            assertThat(cluster.failover(master)).isEqualTo(replica);
        }
        assertThat(cluster.masterForKey(key)).isEqualTo(master);
        assertThat(RespClient.callOnce(master.port(), "GET", key)).isEqualTo("captured");
    }

    @Test
    void killedMasterIsReplacedByItsReplicaAndRejoinsAsReplicaAndCloseLeavesNothingBehind() {
        long startedAt = System.nanoTime();
        RedisCluster cluster = RedisCluster.start();
        System.out.printf("cluster of 3 masters + 3 replicas started in %d ms%n", millisSince(startedAt));
        List<Long> pids;
        try {
            pids = cluster.nodes().stream().map(node -> node.server().pid()).toList();
            String key = "order:7";
            Node master = cluster.masterForKey(key);
            Node replica = cluster.replicas().stream()
                    .filter(node -> ((Long) ((List<?>) RespClient.callOnce(node.port(), "ROLE")).get(2)) == master.port())
                    .findFirst().orElseThrow();
            RespClient.callOnce(master.port(), "SET", key, "v");
            // the write must reach the replica before the kill, or the promoted replica would rightly not have it
            assertThat(RespClient.callOnce(master.port(), "WAIT", "1", "2000")).isEqualTo(1L);

            long killedAt = System.nanoTime();
            cluster.kill(master);
            Node promoted = cluster.awaitFailover(master, Duration.ofSeconds(20));
            System.out.printf("master killed -> replica promoted and cluster_state:ok in %d ms%n", millisSince(killedAt));

            assertThat(promoted).isEqualTo(replica);
            assertThat(promoted.role()).isEqualTo("master");
            assertThat(cluster.masterForKey(key)).isEqualTo(promoted);
            assertThat(cluster.masters()).hasSize(3).doesNotContain(master);
            assertThat(RespClient.callOnce(promoted.port(), "GET", key)).isEqualTo("v");

            long restartedAt = System.nanoTime();
            cluster.restart(master);
            System.out.printf("killed master restarted and rejoined in %d ms%n", millisSince(restartedAt));
            assertThat(master.role()).isEqualTo("slave");
            assertThat(cluster.masterForKey(key)).isEqualTo(promoted);
            // synced from the promoted replica: the restart came back empty, without persistence
            assertThat(cluster.replicasOf(promoted)).containsExactly(master);
            try (RespClient restarted = RespClient.connect(master.port())) {
                restarted.call("READONLY");
                assertThat(restarted.call("GET", key)).isEqualTo("v");
            }
        }
        finally {
            long closingAt = System.nanoTime();
            cluster.close();
            System.out.printf("cluster closed in %d ms%n", millisSince(closingAt));
        }
        assertThat(pids).allSatisfy(pid -> assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty());
        assertThat(cluster.nodes()).allSatisfy(node -> {
            assertThat(node.isRunning()).isFalse();
            assertThat(Files.exists(node.server().directory())).isFalse();
        });
    }

    private static long millisSince(long nanos) {
        return (System.nanoTime() - nanos) / 1_000_000;
    }
}

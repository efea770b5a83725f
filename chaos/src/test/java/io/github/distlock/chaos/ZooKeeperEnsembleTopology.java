package io.github.distlock.chaos;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import io.github.distlock.testsupport.ZooKeeperRole;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;

import static org.awaitility.Awaitility.await;

/**
 * A ZooKeeper ensemble of three servers (in the runner's JVM, each on its own ports). Fault: the leader killed; restarted
 * a few seconds later, it rejoins as a follower.
 */
final class ZooKeeperEnsembleTopology implements Topology {

    /** Sessions expire on tick boundaries: a short tick lets a 3 s session timeout through and expires it promptly. */
    private static final int TICK_MILLIS = 200;

    private final TestingCluster cluster;

    ZooKeeperEnsembleTopology() {
        cluster = new TestingCluster(spec(), spec(), spec());
        try {
            cluster.start();
        }
        catch (Exception ex) {
            throw new IllegalStateException("Could not start the ZooKeeper ensemble", ex);
        }
        awaitServing(Duration.ofSeconds(30));
    }

    private static InstanceSpec spec() {
        return new InstanceSpec(null, -1, -1, -1, true, -1, TICK_MILLIS, -1);
    }

    @Override
    public String backend() {
        return "zookeeper";
    }

    @Override
    public String name() {
        return "ensemble";
    }

    @Override
    public List<Integer> clientPorts() {
        return cluster.getInstances().stream().map(InstanceSpec::getPort).toList();
    }

    @Override
    public List<String> clientProperties(Map<Integer, Integer> proxyPorts) {
        String connect = clientPorts().stream().map(p -> "127.0.0.1:" + proxyPorts.get(p))
                .collect(Collectors.joining(","));
        return List.of("--distlock.backend=zookeeper", "--distlock.zookeeper.connect-string=" + connect);
    }

    @Override
    public List<ServerFault> serverFaults() {
        return List.of(Topology.fault("kill-leader", () -> {
            InstanceSpec leader = await("a leader").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
                    .until(() -> cluster.getInstances().stream().filter(spec -> "leader".equals(mode(spec))).findFirst(),
                            java.util.Optional::isPresent).orElseThrow();
            try {
                cluster.killServer(leader);
            }
            catch (Exception ex) {
                throw new IllegalStateException("Could not kill " + leader, ex);
            }
            return () -> {
                try {
                    cluster.restartServer(leader);
                }
                catch (Exception ex) {
                    throw new IllegalStateException("Could not restart " + leader, ex);
                }
            };
        }));
    }

    @Override
    public void awaitServing(Duration timeout) {
        await("one leader and two followers").atMost(timeout).pollInterval(Duration.ofMillis(100)).until(() -> {
                    List<String> modes = cluster.getInstances().stream().map(ZooKeeperEnsembleTopology::mode).toList();
                    return modes.stream().filter("leader"::equals).count() == 1
                            && modes.stream().filter("follower"::equals).count() == 2;
                });
    }

    /** A server's role: "leader", "follower", or null when down. */
    static String mode(InstanceSpec spec) {
        return ZooKeeperRole.of(spec.getPort());
    }

    @Override
    public void close() {
        try {
            cluster.close();
        }
        catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }
}

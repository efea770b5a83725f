package io.github.distlock.chaos;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import io.github.distlock.testsupport.EtcdCluster;

/**
 * An etcd cluster of three members (etcd processes). Fault: the leader killed (SIGKILL); restarted a few seconds later
 * on its data directory, it rejoins.
 */
final class EtcdClusterTopology implements Topology {

    private final EtcdCluster cluster = EtcdCluster.start(3);

    @Override
    public String backend() {
        return "etcd";
    }

    @Override
    public String name() {
        return "cluster";
    }

    @Override
    public List<Integer> clientPorts() {
        return IntStream.range(0, cluster.size()).mapToObj(cluster::clientPort).toList();
    }

    @Override
    public List<String> clientProperties(Map<Integer, Integer> proxyPorts) {
        String endpoints = clientPorts().stream().map(p -> "http://127.0.0.1:" + proxyPorts.get(p))
                .collect(Collectors.joining(","));
        return List.of("--distlock.backend=etcd", "--distlock.etcd.endpoints=" + endpoints);
    }

    @Override
    public List<ServerFault> serverFaults() {
        return List.of(Topology.fault("kill-leader", () -> {
            int leader = cluster.awaitLeader(Duration.ofSeconds(30));
            cluster.kill(leader);
            return () -> cluster.restart(leader);
        }));
    }

    @Override
    public void awaitServing(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (int i = 0; i < cluster.size(); i++) {
            if (!cluster.isRunning(i)) {
                cluster.restart(i);
            }
        }
        cluster.awaitLeader(Duration.ofNanos(Math.max(deadline - System.nanoTime(), 1)));
    }

    @Override
    public void close() {
        cluster.close();
    }
}

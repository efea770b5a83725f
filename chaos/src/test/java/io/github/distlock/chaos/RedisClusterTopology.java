package io.github.distlock.chaos;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Collectors;

import io.github.distlock.testsupport.RedisCluster;
import io.github.distlock.testsupport.RedisCluster.Node;

/**
 * Redis Cluster: three masters with a replica each. Faults: a master killed (SIGKILL; its replica takes over; restarted
 * a few seconds later, it rejoins as a replica) and a manual failover ({@code CLUSTER FAILOVER} on a replica).
 */
final class RedisClusterTopology implements Topology {

    private static final Duration FAILOVER_TIMEOUT = Duration.ofSeconds(30);

    private final RedisCluster cluster = RedisCluster.start(3, 1);

    @Override
    public String backend() {
        return "redis";
    }

    @Override
    public String name() {
        return "cluster";
    }

    @Override
    public List<Integer> clientPorts() {
        return cluster.nodes().stream().map(Node::port).toList();
    }

    @Override
    public List<String> clientProperties(Map<Integer, Integer> proxyPorts) {
        String nodes = proxyPorts.values().stream().map(p -> "127.0.0.1:" + p).collect(Collectors.joining(","));
        String nat = proxyPorts.entrySet().stream().map(e -> "127.0.0.1:" + e.getKey() + "=127.0.0.1:" + e.getValue())
                .collect(Collectors.joining(","));
        return List.of("--spring.data.redis.cluster.nodes=" + nodes, "--chaos.nat=" + nat);
    }

    @Override
    public List<ServerFault> serverFaults() {
        return List.of(Topology.fault("kill-master", () -> {
            List<Node> masters = cluster.masters();
            Node killed = masters.get(ThreadLocalRandom.current().nextInt(masters.size()));
            cluster.kill(killed);
            return () -> {
                try {
                    cluster.awaitFailover(killed, FAILOVER_TIMEOUT);
                }
                finally {
                    cluster.restart(killed);
                }
            };
        }), Topology.fault("failover", () -> {
            List<Node> replicas = cluster.replicas();
            cluster.failover(replicas.get(ThreadLocalRandom.current().nextInt(replicas.size())));
            return () -> cluster.awaitClusterOk(FAILOVER_TIMEOUT);
        }));
    }

    @Override
    public void awaitServing(Duration timeout) {
        cluster.awaitClusterOk(timeout);
    }

    @Override
    public void close() {
        cluster.close();
    }
}

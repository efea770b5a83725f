package io.github.distlock.chaos;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import io.github.distlock.testsupport.RedisSentinelSetup;
import io.github.distlock.testsupport.RedisServer;
import io.github.distlock.testsupport.RespClient;

import static org.awaitility.Awaitility.await;

/**
 * Redis with Sentinel: a master, a replica, three sentinels. Faults: the master killed (SIGKILL; restarted a few seconds
 * later, empty, and made a replica by the sentinels) and a failover asked of the sentinels with nothing broken.
 */
final class RedisSentinelTopology implements Topology {

    private static final Duration FAILOVER_TIMEOUT = Duration.ofSeconds(30);

    private final RedisSentinelSetup setup = RedisSentinelSetup.start();

    @Override
    public String backend() {
        return "redis";
    }

    @Override
    public String name() {
        return "sentinel";
    }

    private List<RedisServer> servers() {
        List<RedisServer> servers = new ArrayList<>(List.of(setup.master(), setup.replica()));
        servers.addAll(setup.sentinels());
        return servers;
    }

    @Override
    public List<Integer> clientPorts() {
        return servers().stream().map(RedisServer::port).toList();
    }

    @Override
    public List<String> clientProperties(Map<Integer, Integer> proxyPorts) {
        String sentinels = setup.sentinels().stream().map(s -> "127.0.0.1:" + proxyPorts.get(s.port()))
                .collect(Collectors.joining(","));
        String nat = proxyPorts.entrySet().stream().map(e -> "127.0.0.1:" + e.getKey() + "=127.0.0.1:" + e.getValue())
                .collect(Collectors.joining(","));
        return List.of("--spring.data.redis.sentinel.master=" + setup.masterName(),
                "--spring.data.redis.sentinel.nodes=" + sentinels, "--chaos.nat=" + nat);
    }

    @Override
    public List<ServerFault> serverFaults() {
        return List.of(Topology.fault("kill-master", () -> {
            RedisServer killed = setup.killMaster();
            return () -> {
                try {
                    setup.awaitNewMaster(FAILOVER_TIMEOUT);
                }
                finally {
                    killed.restart();
                }
            };
        }), Topology.fault("failover", () -> {
            setup.failover();
            return () -> setup.awaitNewMaster(FAILOVER_TIMEOUT);
        }));
    }

    @Override
    public void awaitServing(Duration timeout) {
        // one master, and the other data server its replica, in sync (a failover needs a replica to promote)
        await("a master and an online replica").atMost(timeout).pollInterval(Duration.ofMillis(100)).until(() -> {
            RedisServer master = setup.currentMaster();
            List<?> role = (List<?>) RespClient.callOnce(master.port(), "ROLE");
            if (!"master".equals(role.get(0)) || ((List<?>) role.get(2)).isEmpty()) {
                return false;
            }
            RedisServer other = master.equals(setup.master()) ? setup.replica() : setup.master();
            List<?> replicaRole = (List<?>) RespClient.callOnce(other.port(), "ROLE");
            return "slave".equals(replicaRole.get(0)) && "connected".equals(replicaRole.get(3));
        });
    }

    @Override
    public void close() {
        setup.close();
    }
}

package io.github.distlock.topology;

import java.time.Duration;
import java.util.List;
import java.util.function.Predicate;

import io.github.distlock.redisson.autoconfigure.RedissonConfigCustomizer;
import io.github.distlock.testsupport.RedisCluster;
import io.github.distlock.testsupport.RedisSentinelSetup;
import io.github.distlock.testsupport.RedisServer;
import io.github.distlock.testsupport.RespClient;
import org.redisson.config.ClusterServersConfig;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * One replicated Redis deployment as the failover scenario sees it: a master that will be killed (the "victim"), its
 * replica that will replace it, and which keys the victim serves. Owns the servers: {@link #close()} stops them all.
 */
abstract class Topology implements AutoCloseable {

    /** {@code cluster} or {@code sentinel}, for the measurement lines. */
    abstract String name();

    /** An application configured for this deployment through {@code spring.data.redis.*} only. */
    abstract ApplicationContextRunner app(Duration watchdogTimeout);

    /** Redisson's topology refresh, set to {@code millis} ({@code scanInterval} of cluster and sentinel mode). */
    abstract RedissonConfigCustomizer scanInterval(int millis);

    /** Redisson's default {@code scanInterval} for this mode. */
    abstract int defaultScanInterval();

    abstract RedisView view();

    /** Whether the master to be killed serves {@code key}. */
    abstract boolean servedByVictim(String key);

    abstract int victimPort();

    abstract RedisServer victimReplica();

    /** Every master's port right now (for command statistics). */
    abstract List<Integer> masterPorts();

    /** SIGKILLs the victim. */
    abstract void killVictim();

    /** Waits until the servers themselves (not the client) have replaced the victim; returns the new master's port. */
    abstract int awaitPromotion(Duration timeout);

    /** {@code count} keys {@code prefix0, prefix1, ...} (with the lock key prefix) that satisfy {@code wanted}. */
    static List<String> keys(String prefix, int count, Predicate<String> wanted) {
        return java.util.stream.IntStream.iterate(0, i -> i + 1)
                .mapToObj(i -> prefix + i)
                .filter(key -> wanted.test(Keys.PREFIX + key))
                .limit(count)
                .toList();
    }

    static Topology cluster() {
        return new ClusterTopology(RedisCluster.start());
    }

    static Topology sentinel() {
        return new SentinelTopology(RedisSentinelSetup.start());
    }

    /** 3 masters + 3 replicas; the victim is the master of slot 0. */
    private static final class ClusterTopology extends Topology {

        private final RedisCluster cluster;
        private final RedisView view;
        private final RedisCluster.Node victim;
        private final RedisServer replica;

        ClusterTopology(RedisCluster cluster) {
            this.cluster = cluster;
            try {
                this.view = RedisView.of(cluster);
                this.victim = cluster.masterForSlot(0);
                this.replica = cluster.replicas().stream()
                        .filter(node -> ((Long) ((List<?>) RespClient.callOnce(node.port(), "ROLE")).get(2))
                                .intValue() == victim.port())
                        .findFirst().orElseThrow().server();
            }
            catch (RuntimeException ex) {
                cluster.close();
                throw ex;
            }
        }

        @Override
        String name() {
            return "cluster";
        }

        @Override
        ApplicationContextRunner app(Duration watchdogTimeout) {
            return Apps.cluster(cluster, watchdogTimeout);
        }

        @Override
        RedissonConfigCustomizer scanInterval(int millis) {
            return RedissonConfigCustomizer.server(server -> ((ClusterServersConfig) server).setScanInterval(millis));
        }

        @Override
        int defaultScanInterval() {
            return new ClusterServersConfig().getScanInterval();
        }

        @Override
        RedisView view() {
            return view;
        }

        @Override
        boolean servedByVictim(String key) {
            return view.masterPortFor(key) == victim.port();
        }

        @Override
        int victimPort() {
            return victim.port();
        }

        @Override
        RedisServer victimReplica() {
            return replica;
        }

        @Override
        List<Integer> masterPorts() {
            return cluster.masters().stream().map(RedisCluster.Node::port).toList();
        }

        @Override
        void killVictim() {
            cluster.kill(victim);
        }

        @Override
        int awaitPromotion(Duration timeout) {
            int port = cluster.awaitFailover(victim, timeout).port();
            view.refresh();
            return port;
        }

        @Override
        public void close() {
            view.close();
            cluster.close();
        }
    }

    /** A master, a replica and 3 sentinels; the victim is the master. */
    private static final class SentinelTopology extends Topology {

        private final RedisSentinelSetup redis;
        private final RedisView view;
        private final RedisServer victim;
        private final RedisServer replica;

        SentinelTopology(RedisSentinelSetup redis) {
            this.redis = redis;
            this.victim = redis.master();
            this.replica = redis.replica();
            try {
                this.view = RedisView.of(redis);
            }
            catch (RuntimeException ex) {
                redis.close();
                throw ex;
            }
        }

        @Override
        String name() {
            return "sentinel";
        }

        @Override
        ApplicationContextRunner app(Duration watchdogTimeout) {
            return Apps.sentinel(redis, watchdogTimeout);
        }

        @Override
        RedissonConfigCustomizer scanInterval(int millis) {
            return RedissonConfigCustomizer.server(server ->
                    ((org.redisson.config.SentinelServersConfig) server).setScanInterval(millis));
        }

        @Override
        int defaultScanInterval() {
            return new org.redisson.config.SentinelServersConfig().getScanInterval();
        }

        @Override
        RedisView view() {
            return view;
        }

        @Override
        boolean servedByVictim(String key) {
            return true;
        }

        @Override
        int victimPort() {
            return victim.port();
        }

        @Override
        RedisServer victimReplica() {
            return replica;
        }

        @Override
        List<Integer> masterPorts() {
            return List.of(redis.currentMaster().port());
        }

        @Override
        void killVictim() {
            redis.killMaster();
        }

        @Override
        int awaitPromotion(Duration timeout) {
            int port = redis.awaitNewMaster(timeout).port();
            view.refresh();
            return port;
        }

        @Override
        public void close() {
            view.close();
            redis.close();
        }
    }
}

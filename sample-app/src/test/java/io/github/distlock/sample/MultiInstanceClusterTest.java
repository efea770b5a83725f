package io.github.distlock.sample;

import java.util.List;

import io.github.distlock.testsupport.RedisCluster;

/**
 * The three-instance flash sale on a Redis Cluster of 3 masters and 3 replicas, configured the Spring Boot way
 * ({@code spring.data.redis.cluster.nodes} only): order and product locks spread over the masters.
 */
class MultiInstanceClusterTest extends MultiInstanceSale {

    private RedisCluster cluster;

    @Override
    List<String> startLockBackend() {
        cluster = RedisCluster.start();
        return List.of("--spring.data.redis.cluster.nodes=" + String.join(",", cluster.nodeAddresses()));
    }

    @Override
    void stopLockBackend() {
        if (cluster != null) {
            cluster.close();
        }
    }
}

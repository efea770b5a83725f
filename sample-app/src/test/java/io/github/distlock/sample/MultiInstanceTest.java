package io.github.distlock.sample;

import java.util.List;

import io.github.distlock.testsupport.RedisServer;
import org.junit.jupiter.api.Test;

/** The three-instance flash sale on one redis-server, and the unsafe endpoint's control. */
class MultiInstanceTest extends MultiInstanceSale {

    private RedisServer redis;

    @Override
    List<String> startLockBackend() {
        redis = RedisServer.start();
        return List.of("--spring.data.redis.host=" + redis.host(), "--spring.data.redis.port=" + redis.port());
    }

    @Override
    void stopLockBackend() {
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void theSameTrafficOnTheUnsafeEndpointCreatesDuplicatesOrOversells() throws Exception {
        unsafeEndpointCreatesDuplicatesOrOversells();
    }
}

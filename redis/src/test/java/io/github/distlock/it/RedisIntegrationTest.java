package io.github.distlock.it;

import io.github.distlock.testsupport.RedisServerExtension;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A Spring Boot context on a real redis-server of its own (started on a free loopback port, stopped after the class),
 * plus a plain Lettuce connection to look at keys and TTLs from outside the library.
 */
@DirtiesContext
public abstract class RedisIntegrationTest {

    @RegisterExtension
    protected static final RedisServerExtension redis = new RedisServerExtension();

    private static RedisClient inspectorClient;
    private static StatefulRedisConnection<String, String> inspectorConnection;

    /** Direct access to the server, bypassing the library. */
    protected static RedisCommands<String, String> redisCommands;

    @DynamicPropertySource
    static void redisProperties(DynamicPropertyRegistry registry) {
        registry.add("spring.data.redis.host", () -> redis.server().host());
        registry.add("spring.data.redis.port", () -> redis.port());
    }

    @BeforeAll
    static void connectInspector() {
        inspectorClient = RedisClient.create(redis.uri());
        inspectorConnection = inspectorClient.connect();
        redisCommands = inspectorConnection.sync();
    }

    @AfterAll
    static void closeInspector() {
        inspectorConnection.close();
        inspectorClient.shutdown();
    }

    @BeforeEach
    void flushRedis() {
        redisCommands.flushall();
    }
}

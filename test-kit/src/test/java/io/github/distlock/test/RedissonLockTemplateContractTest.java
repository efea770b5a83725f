package io.github.distlock.test;

import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.api.RedissonClient;

/** The template's multi-key locks, re-entry and give-backs work on the Redisson provider and a real redis-server. */
class RedissonLockTemplateContractTest extends LockTemplateContractTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private static RedissonClient client;
    private static RedissonClient secondClient;

    @BeforeAll
    static void connect() {
        client = RedissonLockProviderContractTest.newClient(redis.uri());
        secondClient = RedissonLockProviderContractTest.newClient(redis.uri());
    }

    @AfterAll
    static void disconnect() {
        if (client != null) {
            client.shutdown();
        }
        if (secondClient != null) {
            secondClient.shutdown();
        }
    }

    /** Another application instance: a client of its own, so another Redisson id in every lock it holds. */
    @Override
    protected LockProvider createSecondInstance() {
        return new RedissonLockProvider(secondClient);
    }

    @Override
    protected LockProvider createProvider() {
        return new RedissonLockProvider(client);
    }
}

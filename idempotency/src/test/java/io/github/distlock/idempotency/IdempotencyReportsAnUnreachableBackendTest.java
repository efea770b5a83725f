package io.github.distlock.idempotency;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LockBackendException;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.testsupport.RedisServer;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.springframework.core.ResolvableType;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link IdempotencyTemplate#execute} documents {@link LockBackendException} "when the lock backend cannot be
 * reached": with Redis down, the call is refused with that exception (what an application maps to "try again later"),
 * and its code does not run. A real redis-server, stopped under a live client.
 */
class IdempotencyReportsAnUnreachableBackendTest {

    @Test
    void aCallWithRedisDownFailsWithLockBackendExceptionAndDoesNotRun() {
        RedisServer server = RedisServer.start();
        RedissonClient redisson = null;
        try {
            Config config = new Config();
            config.useSingleServer().setAddress(server.uri()).setTimeout(500).setRetryAttempts(0)
                    .setConnectTimeout(500);
            redisson = Redisson.create(config);
            IdempotencyTemplate template = new IdempotencyTemplate(new DefaultLockTemplate(
                    new RedissonLockProvider(redisson), "lock:", Duration.ZERO, null, List.of()),
                    new RedissonIdempotencyStore(redisson), JsonMapper.builder().build(), Duration.ofSeconds(1));
            server.stop();
            AtomicInteger runs = new AtomicInteger();
            assertThatThrownBy(() -> template.execute("down:1", IdempotencyOptions.ttl(Duration.ofMinutes(1)),
                    ResolvableType.forClass(String.class), () -> "run " + runs.incrementAndGet()))
                    .isInstanceOf(LockBackendException.class);
            assertThat(runs).hasValue(0);
        }
        finally {
            if (redisson != null) {
                redisson.shutdown();
            }
            server.close();
        }
    }
}

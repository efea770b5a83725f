package io.github.distlock.startup;

import java.net.ServerSocket;
import java.time.Duration;

import io.github.distlock.LockBackendException;
import io.github.distlock.LockTemplate;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.redisson.autoconfigure.DistlockRedissonAutoConfiguration;
import io.github.distlock.testsupport.RedisServer;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * An application started while Redis is down runs; its lock calls fail typed and fast until Redis is up, and then
 * succeed without a restart. Measures the worst lock call against a dead Redis with a fail-fast budget
 * (distlock.redis.retry-attempts=1, retry-delay=200ms) and with Redisson's defaults (distlock's), and what the lazy
 * connection costs the first call.
 */
class RedisDownAtStartupTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class, AopAutoConfiguration.class,
                    DistlockRedissonAutoConfiguration.class, DistlockAutoConfiguration.class));

    private static int freePort() throws Exception {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    @Test
    void startsWithRedisDownFailsFastAndRecoversWhenRedisComesUp() throws Exception {
        int port = freePort();
        runner.withPropertyValues("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + port,
                "distlock.redis.retry-attempts=1", "distlock.redis.retry-delay=200ms").run(context -> {
            assertThat(context).as("started with Redis down").hasNotFailed();
            LockTemplate locks = context.getBean(LockTemplate.class);

            long worst = 0;
            for (int i = 0; i < 5; i++) {
                long start = System.nanoTime();
                assertThatThrownBy(() -> locks.execute("k", () -> "never")).isInstanceOf(LockBackendException.class)
                        .hasMessageContaining("'lock:k'");
                worst = Math.max(worst, System.nanoTime() - start);
            }
            System.out.printf("distlock: worst lock call against a dead Redis (connection refused), 1 retry after "
                    + "200 ms: %d ms%n", Duration.ofNanos(worst).toMillis());
            assertThat(Duration.ofNanos(worst)).isLessThan(Duration.ofSeconds(4));

            try (RedisServer redis = RedisServer.start(port)) {
                long start = System.nanoTime();
                String result = null;
                // the client reconnects by itself; the first call after Redis is back may still meet a reconnect
                for (int i = 0; i < 50 && result == null; i++) {
                    try {
                        result = locks.execute("k", () -> "locked");
                    }
                    catch (LockBackendException stillReconnecting) {
                        Thread.onSpinWait();
                    }
                }
                System.out.printf("distlock: first successful lock call %d ms after Redis came up%n",
                        Duration.ofNanos(System.nanoTime() - start).toMillis());
                assertThat(result).isEqualTo("locked");
            }
        });
    }

    @Test
    void withTheDefaultBudgetACallAgainstADeadRedisFailsTypedWithinSeconds() throws Exception {
        int port = freePort();
        runner.withPropertyValues("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + port).run(context -> {
            LockTemplate locks = context.getBean(LockTemplate.class);
            long worst = 0;
            for (int i = 0; i < 2; i++) {
                long start = System.nanoTime();
                assertThatThrownBy(() -> locks.execute("k", () -> "never")).isInstanceOf(LockBackendException.class);
                worst = Math.max(worst, System.nanoTime() - start);
            }
            System.out.printf("distlock: worst lock call against a dead Redis, default budget: %d ms%n",
                    Duration.ofNanos(worst).toMillis());
            assertThat(Duration.ofNanos(worst)).isLessThan(Duration.ofSeconds(15));
        });
    }

    /** What connecting on first use costs the first lock call, next to a client that connected at startup. */
    @Test
    void firstCallCostOfALazyStart() {
        try (RedisServer redis = RedisServer.start()) {
            long[] lazy = firstAndSecondCall(redis, false);
            long[] eager = firstAndSecondCall(redis, true);
            System.out.printf("distlock: first/second lock call, lazy start: %d/%d ms; connected at startup: %d/%d ms%n",
                    lazy[0], lazy[1], eager[0], eager[1]);
            assertThat(lazy[0]).isPositive();
        }
    }

    private long[] firstAndSecondCall(RedisServer redis, boolean requireAtStartup) {
        long[] millis = new long[2];
        runner.withPropertyValues("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + redis.port(),
                "distlock.redis.require-at-startup=" + requireAtStartup).run(context -> {
            LockTemplate locks = context.getBean(LockTemplate.class);
            for (int i = 0; i < 2; i++) {
                long start = System.nanoTime();
                locks.execute("first-" + i, () -> "locked");
                millis[i] = Duration.ofNanos(System.nanoTime() - start).toMillis();
            }
        });
        return millis;
    }
}

package io.github.distlock.idempotency;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;
import org.springframework.core.ResolvableType;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A ttl the options accept is a ttl the mark gets: at the extremes (the largest {@link Duration}, Long.MAX_VALUE ms,
 * a hundred years) the call either stores a mark that answers its duplicate, or is refused before it runs with an
 * error naming the ttl; never run with a mark that silently could not be written. On a real redis-server.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class IdempotencyMarkLivesItsWholeTtlTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private RedissonClient redisson;
    private IdempotencyTemplate template;

    @BeforeAll
    void start() {
        Config config = new Config();
        config.useSingleServer().setAddress(redis.uri());
        redisson = Redisson.create(config);
        template = new IdempotencyTemplate(new DefaultLockTemplate(new RedissonLockProvider(redisson), "lock:",
                Duration.ZERO, null, List.of()), new RedissonIdempotencyStore(redisson), JsonMapper.builder().build(),
                Duration.ofSeconds(5));
    }

    @AfterAll
    void stop() {
        if (redisson != null) {
            redisson.shutdown();
        }
    }

    static List<Duration> extremeTtls() {
        return List.of(Duration.ofDays(36500), Duration.ofMillis(Long.MAX_VALUE),
                Duration.ofSeconds(Long.MAX_VALUE, 999_999_999));
    }

    @ParameterizedTest
    @MethodSource("extremeTtls")
    void aDuplicateWithinTheTtlGetsTheFirstResult(Duration ttl) {
        String key = "ttl:" + UUID.randomUUID();
        AtomicInteger runs = new AtomicInteger();
        IdempotencyOptions options = IdempotencyOptions.ttl(ttl);
        String first;
        try {
            first = template.execute(key, options, ResolvableType.forClass(String.class), () -> "run " + runs.incrementAndGet());
        }
        catch (IllegalArgumentException refused) {
            assertThat(runs).as("refused before running").hasValue(0);
            assertThat(refused).hasMessageContaining("ttl");
            return;
        }
        assertThat(redisson.getBucket(template.markKey(key), StringCodec.INSTANCE).isExists())
                .as("mark of a call with ttl %s", ttl).isTrue();
        String duplicate = template.execute(key, options, ResolvableType.forClass(String.class),
                () -> "run " + runs.incrementAndGet());
        assertThat(duplicate).isEqualTo(first).isEqualTo("run 1");
    }
}

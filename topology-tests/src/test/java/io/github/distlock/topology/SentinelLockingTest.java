package io.github.distlock.topology;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.IntStream;

import io.github.distlock.LockContext;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.testsupport.RedisSentinelExtension;
import io.github.distlock.testsupport.RedisServer;
import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An application configured only through {@code spring.data.redis.sentinel.master} and {@code .nodes}: it finds the
 * master through the sentinels, and its locks are on that master and, once granted, on the replica too (Redisson waits
 * for the replica's acknowledgement before it reports a lock taken). Checked on the servers themselves.
 */
class SentinelLockingTest {

    private static final Duration WATCHDOG = Duration.ofSeconds(10);

    @RegisterExtension
    static final RedisSentinelExtension redis = new RedisSentinelExtension();

    private static RedisView view;

    @BeforeAll
    static void look() {
        view = RedisView.of(redis.setup());
    }

    @AfterAll
    static void stopLooking() {
        view.close();
    }

    @Test
    void locksLiveOnTheMasterTheSentinelsNameAndAreOnTheReplicaOnceGranted() throws Throwable {
        RedisServer master = redis.setup().currentMaster();
        RedisServer replica = redis.setup().replica().equals(master) ? redis.setup().master() : redis.setup().replica();
        Queue<String> wrong = new ConcurrentLinkedQueue<>();
        Apps.sentinel(redis.setup(), WATCHDOG).run(app -> {
            LockTemplate locks = app.getBean(LockTemplate.class);
            String clientId = app.getBean(RedissonLockProvider.class).getRedisson().getId();
            try (RespClient onReplica = RespClient.connect(replica.port())) {
                for (String key : IntStream.range(0, 200).mapToObj(i -> "order:" + i).toList()) {
                    String fullKey = locks.fullKey(key);
                    locks.run(key, () -> {
                        List<?> onMaster = (List<?>) view.callOn(master.port(), "HGETALL", fullKey);
                        List<?> replicated = (List<?>) onReplica.call("HGETALL", fullKey);
                        if (onMaster.size() != 2 || !onMaster.get(0).toString().startsWith(clientId + ":")
                                || !onMaster.equals(replicated)) {
                            wrong.add(fullKey + ": master " + onMaster + ", replica " + replicated);
                        }
                    });
                }
            }
        });
        assertThat(wrong).isEmpty();
        assertThat(view.keysOn(master.port(), Keys.PREFIX + "*")).isEmpty();
    }

    /**
     * FAIR (the hand-off lock), taken by script and handed off by a release: in both ways the holder's body starts only
     * once the replica has its lock (synced scripts, and a grantee that confirms its grant synced before it takes it).
     */
    @Test
    void fairLocksAreOnTheReplicaOnceGrantedAlsoWhenHandedOff() throws Throwable {
        RedisServer master = redis.setup().currentMaster();
        RedisServer replica = redis.setup().replica().equals(master) ? redis.setup().master() : redis.setup().replica();
        Queue<String> wrong = new ConcurrentLinkedQueue<>();
        java.util.concurrent.atomic.AtomicInteger bodies = new java.util.concurrent.atomic.AtomicInteger();
        long waitsBefore = waitCalls(master);
        Apps.sentinel(redis.setup(), WATCHDOG).run(app -> {
            LockTemplate locks = app.getBean(LockTemplate.class);
            io.github.distlock.LockOptions fair = io.github.distlock.LockOptions.waitFor(Duration.ofSeconds(30))
                    .withType(io.github.distlock.LockType.FAIR);
            java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(4);
            try {
                List<java.util.concurrent.Future<?>> calls = new java.util.ArrayList<>();
                for (int t = 0; t < 4; t++) {
                    calls.add(pool.submit(() -> {
                        try (RespClient onReplica = RespClient.connect(replica.port())) {
                            for (int i = 0; i < 25; i++) {
                                String fullKey = locks.fullKey("fair:" + (i % 3));
                                locks.run("fair:" + (i % 3), fair, () -> {
                                    bodies.incrementAndGet();
                                    List<?> onMaster = (List<?>) view.callOn(master.port(), "HGETALL", fullKey);
                                    List<?> replicated = (List<?>) onReplica.call("HGETALL", fullKey);
                                    if (onMaster.size() != 2 || !onMaster.equals(replicated)) {
                                        wrong.add(fullKey + ": master " + onMaster + ", replica " + replicated);
                                    }
                                });
                            }
                        }
                        return null;
                    }));
                }
                for (java.util.concurrent.Future<?> call : calls) {
                    call.get(60, java.util.concurrent.TimeUnit.SECONDS);
                }
            }
            finally {
                pool.shutdownNow();
            }
        });
        assertThat(bodies.get()).isEqualTo(100);
        assertThat(wrong).isEmpty();
        // loopback replication is too fast to catch an unsynced grant in the act; the WAITs show the scripts were synced
        // (at least one per acquisition and one per release)
        assertThat(waitCalls(master) - waitsBefore).as("WAIT commands on the master").isGreaterThanOrEqualTo(200);
    }

    /** How many WAIT commands the server has run. */
    private static long waitCalls(RedisServer server) {
        String stats = view.callOn(server.port(), "INFO", "commandstats").toString();
        java.util.regex.Matcher calls = java.util.regex.Pattern.compile("cmdstat_wait:calls=(\\d+)").matcher(stats);
        return calls.find() ? Long.parseLong(calls.group(1)) : 0;
    }

    @Test
    void twoApplicationsExcludeEachOther() throws Throwable {
        List<String> keys = IntStream.range(0, 16).mapToObj(i -> "exclusive:" + i).toList();
        Apps.sentinel(redis.setup(), WATCHDOG).run(first -> Apps.sentinel(redis.setup(), WATCHDOG).run(second -> {
            Exclusion.Result result = new Exclusion(view, keys, 60).run(first, second);
            System.out.printf("MEASURED sentinel exclusion: 2 applications x %d threads, %d keys: %s%n",
                    Exclusion.THREADS, keys.size(), result);

            assertThat(result.failures()).isEmpty();
            assertThat(result.bodies()).isEqualTo(2L * Exclusion.THREADS * 60);
            assertThat(result.overlaps()).isZero();
            assertThat(result.lostUpdates()).isZero();
            assertThat(result.notOwner()).isZero();
        }));
    }

    @Test
    void fencingTokensRiseAcrossApplicationsWithTheirCounterOnTheMaster() throws Throwable {
        RedisServer master = redis.setup().currentMaster();
        List<Long> tokens = new ArrayList<>();
        Queue<String> wrong = new ConcurrentLinkedQueue<>();
        Apps.sentinel(redis.setup(), WATCHDOG).run(first -> Apps.sentinel(redis.setup(), WATCHDOG).run(second -> {
            List<LockTemplate> apps = List.of(first.getBean(LockTemplate.class), second.getBean(LockTemplate.class));
            for (int round = 0; round < 6; round++) {
                LockTemplate locks = apps.get(round % 2);
                String fullKey = locks.fullKey("tenant:{7}:order");
                locks.run("tenant:{7}:order", new LockOptions(Duration.ZERO, LockOptions.WATCHDOG, true), () -> {
                    long token = LockContext.fencingToken().orElseThrow();
                    tokens.add(token);
                    Object stored = view.callOn(master.port(), "GET", Keys.fencingCounter(fullKey));
                    if (!Long.toString(token).equals(stored)) {
                        wrong.add("token " + token + ", counter " + stored);
                    }
                });
            }
        }));
        System.out.printf("MEASURED sentinel fencing: tokens %s%n", tokens);
        assertThat(wrong).isEmpty();
        assertThat(tokens).hasSize(6).isSortedAccordingTo(Long::compare).doesNotHaveDuplicates();
    }
}

package io.github.distlock.testsupport;

import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
class RedisSentinelSetupTest {

    @RegisterExtension
    static final RedisSentinelExtension shared = new RedisSentinelExtension();

    @Test
    void sentinelsReportTheMasterAndKnowTheReplicaAndEachOther() {
        RedisSentinelSetup redis = shared.setup();
        assertThat(redis.masterName()).isEqualTo(RedisSentinelSetup.DEFAULT_MASTER_NAME);
        assertThat(redis.sentinelAddresses()).hasSize(3)
                .allSatisfy(address -> assertThat(address).startsWith("127.0.0.1:"));

        for (RedisServer sentinel : redis.sentinels()) {
            assertThat(RespClient.callOnce(sentinel.port(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", redis.masterName()))
                    .isEqualTo(List.of("127.0.0.1", Integer.toString(redis.master().port())));
            assertThat((List<?>) RespClient.callOnce(sentinel.port(), "SENTINEL", "SENTINELS", redis.masterName()))
                    .hasSize(2);
            assertThat((List<?>) RespClient.callOnce(sentinel.port(), "SENTINEL", "REPLICAS", redis.masterName()))
                    .hasSize(1);
        }
        assertThat(redis.currentMaster()).isSameAs(redis.master());
        assertThat(role(redis.master())).isEqualTo("master");
        assertThat(role(redis.replica())).isEqualTo("slave");

        try (RespClient master = RespClient.connect(redis.master().port())) {
            master.call("SET", "order:1", "placed");
            assertThat(master.call("WAIT", "1", "2000")).isEqualTo(1L);
        }
        assertThat(RespClient.callOnce(redis.replica().port(), "GET", "order:1")).isEqualTo("placed");
    }

    @Test
    void sentinelFailoverPromotesTheReplica() {
        try (RedisSentinelSetup redis = RedisSentinelSetup.start()) {
            long failoverAt = System.nanoTime();
            redis.failover();
            RedisServer promoted = redis.awaitNewMaster(Duration.ofSeconds(15));
            System.out.printf("SENTINEL FAILOVER -> every sentinel reports the replica as master in %d ms%n",
                    millisSince(failoverAt));

            assertThat(promoted).isSameAs(redis.replica());
            assertThat(redis.currentMaster()).isSameAs(redis.replica());
            assertThat(role(promoted)).isEqualTo("master");
            assertThat(RespClient.callOnce(promoted.port(), "SET", "order:3", "shipped")).isEqualTo("OK");
            // not awaited here: the old master stays a master until a sentinel converts it, about 11 s later
        }
    }

    @Test
    void killedMasterIsReplacedByTheReplicaAndCloseLeavesNothingBehind() {
        long startedAt = System.nanoTime();
        RedisSentinelSetup redis = RedisSentinelSetup.start();
        System.out.printf("master + replica + 3 sentinels started in %d ms%n", millisSince(startedAt));
        List<RedisServer> servers = new ArrayList<>(redis.sentinels());
        servers.add(redis.master());
        servers.add(redis.replica());
        List<Long> pids = servers.stream().map(RedisServer::pid).toList();
        try {
            try (RespClient master = RespClient.connect(redis.master().port())) {
                master.call("SET", "order:2", "paid");
                assertThat(master.call("WAIT", "1", "2000")).isEqualTo(1L);
            }

            long killedAt = System.nanoTime();
            RedisServer killed = redis.killMaster();
            RedisServer promoted = redis.awaitNewMaster(Duration.ofSeconds(20));
            System.out.printf("master killed -> every sentinel reports the replica as master in %d ms%n",
                    millisSince(killedAt));

            assertThat(killed).isSameAs(redis.master());
            assertThat(killed.isRunning()).isFalse();
            assertThat(ProcessHandle.of(pids.get(3)).filter(ProcessHandle::isAlive)).isEmpty();
            assertThat(promoted).isSameAs(redis.replica());
            assertThat(role(promoted)).isEqualTo("master");
            assertThat(RespClient.callOnce(promoted.port(), "GET", "order:2")).isEqualTo("paid");
            // the sentinels' own hellos have gone round by now: still exactly the two others each, no stale entries
            for (RedisServer sentinel : redis.sentinels()) {
                assertThat((List<?>) RespClient.callOnce(sentinel.port(), "SENTINEL", "SENTINELS", redis.masterName()))
                        .hasSize(2);
            }
        }
        finally {
            long closingAt = System.nanoTime();
            redis.close();
            System.out.printf("sentinel set-up closed in %d ms%n", millisSince(closingAt));
        }
        assertThat(pids).allSatisfy(pid -> assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty());
        assertThat(servers).allSatisfy(server -> {
            assertThat(server.isRunning()).isFalse();
            assertThat(Files.exists(server.directory())).isFalse();
        });
    }

    private static String role(RedisServer server) {
        return ((List<?>) RespClient.callOnce(server.port(), "ROLE")).get(0).toString();
    }

    private static long millisSince(long nanos) {
        return (System.nanoTime() - nanos) / 1_000_000;
    }
}

package io.github.distlock.testsupport;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class EtcdClusterTest {

    private static final Pattern VALUE = Pattern.compile("\"value\":\"([^\"]*)\"");
    private static final Pattern MEMBER = Pattern.compile("\"ID\":\"(\\d+)\"");

    @Test
    void killedLeaderIsReplacedByAnotherMemberAndRejoinsWithTheDataWrittenBeforeAndDuringItsAbsence() {
        long startedAt = System.nanoTime();
        EtcdCluster etcd = EtcdCluster.start(3);
        System.out.printf("etcd cluster of 3 started with a leader in %d ms%n", millisSince(startedAt));
        List<Long> pids = new ArrayList<>();
        try {
            assertThat(etcd.size()).isEqualTo(3);
            assertThat(etcd.endpoints()).containsExactly("http://127.0.0.1:" + etcd.clientPort(0),
                    "http://127.0.0.1:" + etcd.clientPort(1), "http://127.0.0.1:" + etcd.clientPort(2));
            IntStream.range(0, 3).forEach(i -> pids.add(etcd.pid(i)));
            int leader = etcd.leader();
            assertThat(etcd.awaitLeader(Duration.ofSeconds(5))).isEqualTo(leader);
            put(etcd, leader, "order:1", "placed");

            long killedAt = System.nanoTime();
            etcd.kill(leader);
            assertThat(etcd.isRunning(leader)).isFalse();
            assertThat(ProcessHandle.of(pids.get(leader)).filter(ProcessHandle::isAlive)).isEmpty();
            int next = etcd.awaitLeader(Duration.ofSeconds(15));
            System.out.printf("leader killed -> a new leader agreed on in %d ms%n", millisSince(killedAt));
            assertThat(next).isNotEqualTo(leader).isBetween(0, 2);
            assertThat(etcd.leader()).isEqualTo(next);
            // two of three are a quorum: the cluster takes writes while the old leader is down
            put(etcd, next, "order:2", "paid");

            long restartedAt = System.nanoTime();
            etcd.restart(leader);
            System.out.printf("old leader restarted and rejoined in %d ms%n", millisSince(restartedAt));
            assertThat(etcd.isRunning(leader)).isTrue();
            assertThat(etcd.clientPort(leader)).isEqualTo(Integer.parseInt(
                    etcd.endpoints().get(leader).substring("http://127.0.0.1:".length())));
            String membersSeenByRestarted = etcd.post(leader, "/v3/cluster/member/list", "{}");
            assertThat(MEMBER.matcher(membersSeenByRestarted).results().count()).isEqualTo(3);
            // linearizable reads through the restarted member: it has what was written before and while it was down
            assertThat(get(etcd, leader, "order:1")).isEqualTo("placed");
            assertThat(get(etcd, leader, "order:2")).isEqualTo("paid");
            assertThat(etcd.awaitLeader(Duration.ofSeconds(5))).isEqualTo(etcd.leader());
            pids.set(leader, etcd.pid(leader));
        }
        finally {
            long closingAt = System.nanoTime();
            etcd.close();
            System.out.printf("etcd cluster closed in %d ms%n", millisSince(closingAt));
        }
        assertThat(pids).allSatisfy(pid -> assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty());
        assertThat(Files.exists(etcd.directory())).isFalse();
        assertThat(IntStream.range(0, 3)).allSatisfy(i -> assertThat(etcd.isRunning(i)).isFalse());
    }

    @Test
    void badArgumentsAreRefusedNamingWhatIsWrong() {
        assertThatThrownBy(() -> EtcdCluster.start(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("EtcdCluster.start(members) needs at least 1 member, got 0");
    }

    private static void put(EtcdCluster etcd, int member, String key, String value) {
        etcd.post(member, "/v3/kv/put", "{\"key\":\"" + base64(key) + "\",\"value\":\"" + base64(value) + "\"}");
    }

    private static String get(EtcdCluster etcd, int member, String key) {
        String response = etcd.post(member, "/v3/kv/range", "{\"key\":\"" + base64(key) + "\"}");
        Matcher value = VALUE.matcher(response);
        return value.find() ? new String(Base64.getDecoder().decode(value.group(1)), StandardCharsets.UTF_8) : null;
    }

    private static String base64(String text) {
        return Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }

    private static long millisSince(long nanos) {
        return (System.nanoTime() - nanos) / 1_000_000;
    }
}

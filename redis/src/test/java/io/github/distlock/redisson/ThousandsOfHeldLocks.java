package io.github.distlock.redisson;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.redisson.api.RBatch;
import org.redisson.api.RScript;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Thousands of watchdog locks held through one provider for several watchdog timeouts, then a few of them taken away
 * behind its back: shared by the single-server and the cluster test.
 */
public final class ThousandsOfHeldLocks {

    /** Acquisitions on their way at once. */
    private static final int WINDOW = 100;

    private ThousandsOfHeldLocks() {
    }

    /**
     * Holds {@code count} locks, every other one with a hash tag shared by a tenth of them, (REENTRANT, with a WRITE and a READ lock every hundredth) for two watchdog timeouts (six renewals):
     * every key stays, with a TTL within the timeout, and none is reported lost. Then two REENTRANT keys and a WRITE
     * key are deleted and one REENTRANT key is handed to another owner: exactly those four are reported lost within a
     * watchdog timeout, and the one now another owner's is not extended by the renewal.
     */
    public static void holdRenewAndReportExactlyTheKeysTakenAway(RedissonClient client, LockProvider provider,
            String prefix, int count, Duration watchdog) {
        List<String> redisKeys = new ArrayList<>();
        List<LockHandle> handles = new ArrayList<>();
        Set<String> lost = ConcurrentHashMap.newKeySet();
        // a window at a time, as an application's threads would: a flood of thousands of acquisitions queued at once
        // would hold up every other command of the client, renewals included, for longer than this short watchdog
        for (int from = 0; from < count; from += WINDOW) {
            List<CompletableFuture<LockHandle>> window = new ArrayList<>();
            for (int i = from; i < Math.min(count, from + WINDOW); i++) {
                LockType type = (i % 100 == 1) ? LockType.WRITE : (i % 100 == 2) ? LockType.READ : LockType.REENTRANT;
                // every other key shares a hash tag with a tenth of the others: on a cluster, chunks of several keys
                String key = prefix + ((i % 2 == 0) ? "{group-" + (i % 20) + "}:" : "") + i;
                window.add(provider.acquire(new LockRequest(key, 0, 0, false, type, LockOwner.next())));
                redisKeys.add(type == LockType.REENTRANT ? key : LockKeys.readWriteKey(key));
            }
            for (CompletableFuture<LockHandle> acquisition : window) {
                LockHandle handle = acquisition.orTimeout(30, TimeUnit.SECONDS).join();
                String key = redisKeys.get(handles.size());
                assertThat(handle).as("lock %s", key).isNotNull();
                handle.whenLost(reason -> lost.add(key));
                handles.add(handle);
            }
        }
        try {
            await().pollInterval(Duration.ofMillis(100)).during(watchdog.multipliedBy(2))
                    .atMost(watchdog.multipliedBy(4))
                    .until(() -> countExisting(client, redisKeys) == count && lost.isEmpty());
            List<Long> ttls = ttlRange(client, redisKeys);
            assertThat(ttls.get(0)).as("shortest TTL").isPositive();
            assertThat(ttls.get(1)).as("longest TTL").isLessThanOrEqualTo(watchdog.toMillis());

            String gone = redisKeys.get(10);
            String goneToo = redisKeys.get(count - 10);
            String writeGone = redisKeys.get(101);
            String retaken = redisKeys.get(20);
            client.getKeys().delete(gone, goneToo, writeGone, retaken);
            client.getScript(StringCodec.INSTANCE).eval(retaken, RScript.Mode.READ_WRITE,
                    "return redis.call('hset', KEYS[1], 'someone-else:1', 1)", RScript.ReturnType.LONG,
                    List.of(retaken));

            await().atMost(watchdog).until(() -> lost.size() >= 4);
            assertThat(lost).containsExactlyInAnyOrder(gone, goneToo, writeGone, retaken);
            assertThat(client.getBucket(retaken).remainTimeToLive()).as("TTL of the key another owner took").isEqualTo(-1);
            assertThat(countExisting(client, redisKeys)).isEqualTo(count - 3);
        }
        finally {
            CompletableFuture.allOf(handles.stream().map(LockHandle::releaseAsync).toArray(CompletableFuture[]::new))
                    .orTimeout(30, TimeUnit.SECONDS).exceptionally(ignored -> null).join();
            client.getKeys().delete(redisKeys.get(20));
        }
    }

    private static long countExisting(RedissonClient client, List<String> keys) {
        return client.getKeys().countExists(keys.toArray(String[]::new));
    }

    /**
     * The shortest and longest PTTL among {@code keys}, in one batch (pipelined per node): thousands of single
     * commands would queue up the client's other commands, the provider's renewals among them.
     */
    private static List<Long> ttlRange(RedissonClient client, List<String> keys) {
        RBatch batch = client.createBatch();
        keys.forEach(key -> batch.getBucket(key).remainTimeToLiveAsync());
        List<Long> values = batch.execute().getResponses().stream().map(ttl -> (Long) ttl).toList();
        return List.of(values.stream().mapToLong(Long::longValue).min().orElseThrow(),
                values.stream().mapToLong(Long::longValue).max().orElseThrow());
    }
}

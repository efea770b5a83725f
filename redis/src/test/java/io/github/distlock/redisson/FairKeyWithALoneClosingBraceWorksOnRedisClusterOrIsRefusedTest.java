package io.github.distlock.redisson;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.RedisCluster;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The FAIR lock's companions, the late-script tombstone included, must share the lock's cluster slot, or the key must
 * be refused up front. (A first script answered BUSY, which Redis did not run, does not fail a 30 s wait either; that
 * needs no test of its own.)
 */
class FairKeyWithALoneClosingBraceWorksOnRedisClusterOrIsRefusedTest extends HandoffTestBase {

    /**
     * A FAIR KEY THAT CAN NEVER BE TAKEN ON REDIS CLUSTER (key slots). The tombstone, like every companion, is named by
     * {@code RedissonObject.prefixName}: {@code distlock_gone:{K}:<field>} for a key without '{'. A key with a '}' and
     * no '{' ({@code lock:a}b}) passes {@code checkHashTag} (it looks for a '{' only), yet {@code {lock:a}b}} closes the
     * companion's hash tag at the key's own '}': the companions hash {@code lock:a}, the lock hashes the whole key —
     * other slots, and every FAIR script fails with CROSSSLOT. Either the key is refused up front with a clear
     * {@code IllegalArgumentException} (as {@code checkHashTag} does for a '{' without a tag), or it must work.
     */
    @Test
    void aFairKeyWithAClosingBraceOnlyWorksOnRedisClusterOrIsRefusedUpFront() throws Exception {
        String key = "lock:a}b";
        assertThat(RedisCluster.slotOf(HandoffLocks.tombstoneKey(key, "c:1")))
                .as("the tombstone's slot is not the lock's").isNotEqualTo(RedisCluster.slotOf(key));
        try (RedisCluster cluster = RedisCluster.start(3, 0)) {
            Config config = new Config();
            config.setLockWatchdogTimeout(WATCHDOG_MILLIS);
            config.useClusterServers().setNodeAddresses(cluster.nodeUris());
            RedissonClient client = Redisson.create(config);
            try (RedissonLockProvider provider = new RedissonLockProvider(client)) {
                Object outcome;
                try {
                    outcome = provider.acquire(new LockRequest(key, 0, Duration.ofSeconds(10).toNanos(), false,
                            LockType.FAIR, LockOwner.next())).handle((acquired, failure) -> (failure != null)
                                    ? failure : acquired).get(10, TimeUnit.SECONDS);
                }
                catch (IllegalArgumentException refused) {
                    outcome = refused;
                }
                if (outcome instanceof LockHandle handle) {
                    assertThat(handle.release()).isTrue();
                }
                else {
                    assertThat(outcome).as("FAIR lock on key '%s' on Redis Cluster", key)
                            .isInstanceOf(IllegalArgumentException.class);
                }
            }
            finally {
                client.shutdown();
            }
        }
    }
}

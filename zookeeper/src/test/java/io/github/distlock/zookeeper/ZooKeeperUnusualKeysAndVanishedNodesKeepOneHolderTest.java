package io.github.distlock.zookeeper;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The ZooKeeper backend under interleavings and inputs that could give two holders or a stuck lock (a vanished node,
 * keys that differ only in an unpaired surrogate, a key past the packet limit): it gives neither.
 */
@Timeout(60)
class ZooKeeperUnusualKeysAndVanishedNodesKeepOneHolderTest extends ZooKeeperServerTestBase {

    private static final String BASE = "/distlock-interleavings";
    private static final Duration SLACK = Duration.ofSeconds(10);

    @Override
    String basePath() {
        return BASE;
    }

    private static LockRequest request(String key, Duration wait) {
        return new LockRequest(key, wait.toNanos(), 0, false, LockType.REENTRANT, LockOwner.next());
    }

    private LockHandle tryOnce(String key) throws Exception {
        return provider.acquire(request(key, Duration.ZERO)).get(SLACK.toMillis(), TimeUnit.MILLISECONDS);
    }

    private List<String> nodes(String key) throws Exception {
        return ZooKeeperTesting.lockNodes(client, provider.lockPath(key));
    }

    /** The outcome of a future: its value, or its failure's cause. */
    private static Object outcome(CompletableFuture<LockHandle> future) throws Exception {
        try {
            return future.get(SLACK.toMillis(), TimeUnit.MILLISECONDS);
        }
        catch (ExecutionException ex) {
            return ex.getCause();
        }
    }

    /**
     * A waiter whose node is gone does not take the lock when the nodes before it go, so a newcomer after it is the
     * only holder (the etcd backend guards the same case with a check of its own).
     */
    @Test
    void aWaiterWhoseNodeVanishedFailsAndANewcomerIsTheOnlyHolder() throws Exception {
        LockHandle holder = tryOnce("vanished");
        CompletableFuture<LockHandle> waiter = provider.acquire(request("vanished", Duration.ofSeconds(30)));
        await().atMost(SLACK).until(() -> nodes("vanished").size() == 2);
        client.delete().forPath(provider.lockPath("vanished") + "/" + nodes("vanished").get(1));

        assertThat(holder.release()).isTrue();
        Object waited = outcome(waiter);
        LockHandle newcomer = tryOnce("vanished");
        assertThat(newcomer).as("a newcomer once the holder released").isNotNull();
        assertThat(waited).as("the waiter whose node vanished").isInstanceOf(IllegalStateException.class);
        assertThat(((Throwable) waited).getMessage()).contains("'vanished'").contains("vanished while waiting");
        assertThat(newcomer.release()).isTrue();
    }

    /**
     * Distinct keys, distinct nodes: two keys that differ only in an unpaired surrogate (a broken string, e.g. one cut
     * in the middle of an emoji) must not share a lock. An encoding through UTF-8 would turn every unpaired surrogate
     * into '?', so "\uD800" and "\uDBFF" would both become %3F. (A call locking both at once would wait for itself.)
     */
    @Test
    void keysThatDifferOnlyInAnUnpairedSurrogateHaveDistinctNodes() {
        assertThat(provider.lockPath("cut\uD83D")).isNotEqualTo(provider.lockPath("cut\uD83C"));
    }

    /**
     * A key too long for ZooKeeper's packet limit (jute.maxbuffer, 1 MB) must fail that acquisition with a clear error,
     * not reset the connection that every other lock of the client lives on (SUSPENDED reports them all lost).
     */
    @Test
    void aHugeKeyFailsAloneAndDoesNotCostTheOtherHoldersTheirLocks() throws Exception {
        LockHandle victim = tryOnce("victim");
        List<String> losses = new CopyOnWriteArrayList<>();
        victim.whenLost(losses::add);

        assertThatThrownBy(() -> provider.acquire(request("k".repeat(1_100_000), Duration.ofSeconds(1))))
                .as("the acquisition with a 1.1 MB key").isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("too long for ZooKeeper");
        await().during(Duration.ofSeconds(1)).atMost(SLACK).until(losses::isEmpty);
        assertThat(victim.release()).isTrue();
    }
}

package io.github.distlock.redisson;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.RedisServerExtension;
import io.github.distlock.testsupport.TcpProxy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Permits ({@link PermitLocks} through {@link RedissonLockProvider}) on a real redis-server, under callers that ask
 * for different counts, keys named like a permit set, and a cancelled caller whose reply was lost. Each test states
 * the property permits must keep.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PermitsStayCountedUnderRacesAndLookalikeKeysTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private RedissonClient redisson;
    private RedissonLockProvider provider;

    @BeforeAll
    void start() {
        Config config = new Config();
        config.useSingleServer().setAddress(redis.uri()).setTimeout(10_000);
        redisson = Redisson.create(config);
        provider = new RedissonLockProvider(redisson);
    }

    @AfterAll
    void stop() {
        if (provider != null) {
            provider.close();
        }
        if (redisson != null) {
            redisson.shutdown();
        }
    }

    private static LockRequest permit(String key, int permits, Duration wait, Duration lease) {
        return new LockRequest(key, wait.toNanos(), lease.toNanos(), false, LockType.REENTRANT, LockOwner.next(),
                permits);
    }

    private long members(String key) {
        return redisson.getScoredSortedSet("distlock_permits:{" + key + "}", StringCodec.INSTANCE).size();
    }

    /**
     * Two callers of one key that disagree on N (a rolling deploy that lowers "at most 5 exports" to 3; two methods
     * sharing a key): three holders that were promised "at most 3", then a caller saying 5 takes a fourth. The count
     * is not kept with the key, each script trusts its caller's. Expected: the fourth is refused (or fails naming the
     * mismatch) while three hold.
     */
    @Test
    void aCallerWithALargerNDoesNotJoinHoldersPromisedASmallerOne() {
        String key = "lock:mixed";
        for (int i = 0; i < 3; i++) {
            assertThat(provider.acquire(permit(key, 3, Duration.ZERO, Duration.ofSeconds(30))).join())
                    .as("permit %d of 3", i).isNotNull();
        }
        LockHandle fourth;
        try {
            fourth = provider.acquire(permit(key, 5, Duration.ZERO, Duration.ofSeconds(30))).join();
        }
        catch (RuntimeException mismatch) {
            fourth = null;
        }
        assertThat(fourth).as("a fourth holder of a key three hold with permits = 3 (%d members)", members(key))
                .isNull();
    }

    /**
     * A lock whose key text is another key's permit set ({@code "report:" + tenant} with tenant "permits", beside
     * permits on "report"): the two share one Redis key of different types, so whichever comes second fails with
     * WRONGTYPE, a backend error for a key nobody holds in its own family. Expected: permits of "report" are taken
     * while the lock "report:permits" is held (they are documented as apart).
     */
    @Test
    void aLockNamedLikeAPermitSetDoesNotBreakThePermitsOfItsPrefix() {
        LockHandle lock = provider.acquire(new LockRequest("lock:report:permits", 0, Duration.ofSeconds(30).toNanos(),
                false, LockType.REENTRANT, LockOwner.next())).join();
        assertThat(lock).isNotNull();
        try {
            CompletableFuture<LockHandle> permit = provider.acquire(permit("lock:report", 3, Duration.ZERO,
                    Duration.ofSeconds(30)));
            assertThat(permit).as("permits of 'report' while the lock 'report:permits' is held")
                    .succeedsWithin(Duration.ofSeconds(10)).isNotNull();
        }
        finally {
            lock.release();
        }
    }

    /**
     * A caller that stops waiting (the template cancels the acquisition: its thread was interrupted, or its wait ran
     * out) while its ACQUIRE script is in flight, and the script runs but its reply is lost (connection reset). The
     * cancelled future swallows the failure (PermitLocks.attempt: completeExceptionally on a cancelled future is a
     * no-op; acquirePermit: a CancellationException gives nothing back), so the permit stays taken by nobody for its
     * whole lease (here 60 s; with a fixed lease of an hour, an hour): N - 1 permits for everyone meanwhile. The
     * path without the cancel gives back; this one should too. Expected: the permit is gone within a few seconds.
     */
    @Test
    void aPermitTakenByTheScriptOfACancelledCallerWhoseReplyWasLostIsGivenBack() throws Exception {
        String key = "lock:cancelled";
        LockHandle other = provider.acquire(permit(key, 2, Duration.ZERO, Duration.ofSeconds(60))).join();
        assertThat(other).isNotNull();
        try (TcpProxy proxy = TcpProxy.start(redis.port())) {
            Config config = new Config();
            config.useSingleServer().setAddress(proxy.uri()).setTimeout(1000).setRetryAttempts(0);
            RedissonClient proxied = Redisson.create(config);
            try (RedissonLockProvider callerSide = new RedissonLockProvider(proxied)) {
                // requests reach Redis, answers don't come back
                proxy.holdReplies();
                CompletableFuture<LockHandle> caller = callerSide.acquire(permit(key, 2, Duration.ofSeconds(30),
                        Duration.ofSeconds(60)));
                // its script ran and took the free permit: its field is in the set, its reply is held back
                String callerPrefix = proxied.getId() + ":";
                await().atMost(Duration.ofSeconds(5)).until(() -> permitHolders(key).stream()
                        .anyMatch(m -> m.startsWith(callerPrefix)));
                assertThat(caller.isDone()).isFalse();
                assertThat(caller.cancel(false)).isTrue();
                // the connection is reset: the reply is lost; the client reports a failure (a timeout at most 1 s after the
                // script was sent, no retry)
                proxy.dropConnections();
                await().atMost(Duration.ofSeconds(8)).untilAsserted(() -> assertThat(permitHolders(key))
                        .as("the permit of the cancelled caller").noneMatch(m -> m.startsWith(callerPrefix)));
            }
            finally {
                proxied.shutdown();
            }
        }
        finally {
            other.release();
            redisson.getKeys().delete("distlock_permits:{" + key + "}");
        }
    }

    private List<String> permitHolders(String key) {
        // members are "<N>|<owner field>"
        return redisson.<String>getScoredSortedSet("distlock_permits:{" + key + "}", StringCodec.INSTANCE).readAll()
                .stream().map(member -> member.substring(member.indexOf('|') + 1)).toList();
    }
}

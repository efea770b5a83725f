package io.github.distlock.test;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockHolderInfo;
import io.github.distlock.spi.LockInspector;
import io.github.distlock.spi.LockInstance;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.RedisServerExtension;
import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.RedissonBaseLock;
import org.redisson.RedissonLock;
import org.redisson.RedissonLockEntry;
import org.redisson.RedissonObject;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The Redisson provider keeps the provider contract, on a real redis-server. Two of its cases guard this provider in
 * particular: FAIR waiters that give up must leave Redisson's queue (waits must reach Redisson in the right unit), and
 * READ/WRITE locks must not share the hash of a REENTRANT lock of the same key, whose lock a reader's release could
 * delete.
 */
class RedissonLockProviderContractTest extends LockProviderContractTest {

    /** Short, so that the renewal and dead-holder tests take seconds: the suite waits for it. */
    static final Duration WATCHDOG = Duration.ofSeconds(1);

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private static RedissonClient client;
    /** The other instance's client: a client id of its own, shared by the tests (a client starts in seconds). */
    private static RedissonClient otherClient;

    @BeforeAll
    static void connect() {
        client = newClient(redis.uri());
        otherClient = newClient(redis.uri());
    }

    @AfterAll
    static void disconnect() {
        for (RedissonClient each : new RedissonClient[] {client, otherClient}) {
            if (each != null) {
                each.shutdown();
            }
        }
    }

    static RedissonClient newClient(String uri) {
        Config config = new Config();
        config.setLockWatchdogTimeout(WATCHDOG.toMillis());
        config.useSingleServer().setAddress(uri)
                // a loaded 2-core machine can stall a reply for seconds; exclusion, not latency, is tested
                .setTimeout(10_000)
                .setConnectionMinimumIdleSize(2)
                .setSubscriptionConnectionMinimumIdleSize(1);
        return Redisson.create(config);
    }

    /** Every provider of the running test: REENTRANT waiters are counted in their lines. */
    private final List<RedissonLockProvider> providers = new CopyOnWriteArrayList<>();

    @Override
    protected LockProvider createProvider() {
        RedissonLockProvider provider = new RedissonLockProvider(client);
        providers.add(provider);
        return provider;
    }

    @Override
    protected Duration watchdogTimeout() {
        return WATCHDOG;
    }

    /** Another process: a client of its own, shut down without a release (its watchdog stops with it). */
    @Override
    protected void acquireAndAbandon(LockRequest request) {
        RedissonClient dying = newClient(redis.uri());
        try (RedissonLockProvider other = new RedissonLockProvider(dying)) {
            LockHandle handle = other.acquire(request).join();
            assertThat(handle).as("the lock to abandon").isNotNull();
        }
        finally {
            dying.shutdown();
        }
    }

    @Override
    protected void expireBehindItsBack(String key) {
        assertThat(RespClient.callOnce(redis.port(), "DEL", key)).as("keys deleted").isEqualTo(1L);
    }

    /**
     * A fair lock's waiters have an entry each in a Redis hash. REENTRANT and WRITE waiters have no queue in Redis.
     * REENTRANT waiters wait in their provider's line for the key, which a release message wakes: a waiter is in once
     * it is in the line and the line's subscription is confirmed. WRITE waiters each try the lock once, then wait for
     * its release message on a subscription their client shares among the waiters of the key, counting them; a waiter
     * is in once that subscription is confirmed and counts it. The default
     * (each waiter pending for a quarter of a second) cannot queue four waiters within the short run of
     * {@code cancelledWaitersLeaveNoLockBehind} on a loaded machine, which then sits out its long run of seconds.
     */
    @Override
    protected void awaitQueued(LockType type, String key, int count, CompletableFuture<LockHandle> latest) {
        if (type == LockType.REENTRANT) {
            await().atMost(slack()).until(() -> providers.stream()
                    .mapToInt(each -> io.github.distlock.redisson.RedisProviderProbe.reentrantWaiters(each, key))
                    .sum() >= count && !latest.isDone());
            return;
        }
        if (type == LockType.WRITE) {
            await().atMost(slack()).until(() -> subscribedWaiters(client, type, key)
                    + subscribedWaiters(otherClient, type, key) >= count && !latest.isDone());
            return;
        }
        if (type != LockType.FAIR) {
            super.awaitQueued(type, key, count, latest);
            return;
        }
        String entries = "distlock_waiters:{" + key + "}";
        await().atMost(slack()).until(() -> (Long) RespClient.callOnce(redis.port(), "HLEN", entries) >= count);
    }

    /**
     * The waiters for {@code key} in {@code redisson} (this instance's client or the other's) whose subscription to
     * its release messages Redis confirmed: Redisson's own count, which it keeps out of its public API (read by
     * reflection, so a Redisson upgrade that renames it fails here, loudly, rather than letting the test pass on a
     * guess).
     */
    private static int subscribedWaiters(RedissonClient redisson, LockType type, String key)
            throws ReflectiveOperationException {
        RLock lock = (type == LockType.REENTRANT) ? redisson.getLock(key)
                : redisson.getReadWriteLock(RedissonObject.prefixName("distlock_rw", key)).writeLock();
        Field pubSub = RedissonLock.class.getDeclaredField("pubSub");
        pubSub.setAccessible(true);
        Field entries = Class.forName("org.redisson.pubsub.PublishSubscribe").getDeclaredField("entries");
        entries.setAccessible(true);
        Method entryName = RedissonBaseLock.class.getDeclaredMethod("getEntryName");
        entryName.setAccessible(true);
        Map<?, ?> subscriptions = (Map<?, ?>) entries.get(pubSub.get(lock));
        RedissonLockEntry entry = (RedissonLockEntry) subscriptions.get(entryName.invoke(lock));
        return (entry == null || !entry.getPromise().isDone() || entry.getPromise().isCompletedExceptionally()) ? 0
                : entry.acquired();
    }

    @Override
    protected boolean closesKeys() {
        return true;
    }

    @Override
    protected boolean closesPermits() {
        return true;
    }

    /** The message to the holder's instance, not the lease check (a third of the watchdog) nor a minute's lease. */
    @Override
    protected Duration evictionNotice() {
        return Duration.ofSeconds(2);
    }

    /**
     * A provider on a client of its own, announced, and listening for evictions: a probe lock of a minute, evicted
     * from this test's provider, is reported lost to it (a message published before its subscription would be lost).
     */
    @Override
    protected LockProvider createOtherInstance() {
        RedissonLockProvider other = new RedissonLockProvider(otherClient);
        providers.add(other);
        other.announce(new LockInstance("contract-other", "other-host", 2));
        LockHandle probe = other.acquire(new LockRequest(key("probe"), 0, TimeUnit.MINUTES.toNanos(1), false,
                LockType.REENTRANT, LockOwner.next())).join();
        assertThat(probe).as("the probe lock").isNotNull();
        CountDownLatch told = new CountDownLatch(1);
        probe.whenLost(how -> told.countDown());
        await("the other instance listening for evictions").atMost(slack()).until(() -> {
            ((LockInspector) provider()).forceRelease(key("probe"));
            return told.await(100, TimeUnit.MILLISECONDS);
        });
        probe.releaseAsync();
        return other;
    }

    /**
     * Every kind of Redis hold on another instance is told of its force release by the message, not by its lease: each
     * holds a fixed lease of a minute, which no lease check looks at. FAIR and permits live in keys of their own, READ
     * and WRITE in the read/write hash; the message names the key the caller locked. A force release from one reader's
     * owner tells that reader only, and one from a writer that also reads tells both of its holds.
     */
    @Test
    void aForceReleaseTellsEveryKindOfHolderOnAnotherInstanceAtOnce() {
        RedissonLockProvider other = (RedissonLockProvider) createOtherInstance();
        try {
            LockInspector inspector = (LockInspector) provider();
            long minute = TimeUnit.MINUTES.toNanos(1);
            List<LockRequest> requests = List.of(
                    new LockRequest(key("fair"), 0, minute, false, LockType.FAIR, LockOwner.next()),
                    new LockRequest(key("write"), 0, minute, false, LockType.WRITE, LockOwner.next()),
                    new LockRequest(key("permits"), 0, minute, false, LockType.REENTRANT, LockOwner.next(), 2));
            for (LockRequest request : requests) {
                LockHandle held = other.acquire(request).join();
                assertThat(held).as(request.toString()).isNotNull();
                List<String> lost = new CopyOnWriteArrayList<>();
                held.whenLost(lost::add);
                assertThat(inspector.forceRelease(request.key())).extracting(LockHolderInfo::owner)
                        .containsExactly(other.ownerName(request.owner().id()));
                await(request.type() + " told").atMost(evictionNotice()).until(() -> !lost.isEmpty());
                assertThat(lost).singleElement().asString().contains("force-released");
                assertThat(held.release()).isFalse();
            }
            String key = key("readers");
            LockRequest first = new LockRequest(key, 0, minute, false, LockType.READ, LockOwner.next());
            LockRequest second = new LockRequest(key, 0, minute, false, LockType.READ, LockOwner.next());
            LockHandle evicted = other.acquire(first).join();
            LockHandle kept = other.acquire(second).join();
            List<String> lost = new CopyOnWriteArrayList<>();
            evicted.whenLost(how -> lost.add("first"));
            kept.whenLost(how -> lost.add("second"));
            assertThat(inspector.forceRelease(key, other.ownerName(first.owner().id())).released()).isTrue();
            await("the evicted reader told").atMost(evictionNotice()).until(() -> !lost.isEmpty());
            assertThat(evicted.release()).isFalse();
            assertThat(kept.release()).isTrue();
            assertThat(lost).containsExactly("first");

            // a writer's owner reading the key it writes holds twice: both holds are told
            String written = key("writer-reads");
            LockOwner writerOwner = LockOwner.next();
            LockHandle write = other.acquire(new LockRequest(written, 0, minute, false, LockType.WRITE, writerOwner)).join();
            LockHandle read = other.acquire(new LockRequest(written, 0, minute, false, LockType.READ, writerOwner)).join();
            assertThat(read).as("the writer's own read").isNotNull();
            List<String> writerLost = new CopyOnWriteArrayList<>();
            write.whenLost(how -> writerLost.add("write"));
            read.whenLost(how -> writerLost.add("read"));
            assertThat(inspector.forceRelease(written, other.ownerName(writerOwner.id())).released()).isTrue();
            await("both holds of the writer told").atMost(evictionNotice()).until(() -> writerLost.size() == 2);
            assertThat(writerLost).containsExactlyInAnyOrder("write", "read");
        }
        finally {
            other.close();
        }
    }
}

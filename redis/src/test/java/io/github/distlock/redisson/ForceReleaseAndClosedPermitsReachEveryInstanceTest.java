package io.github.distlock.redisson;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockKeyClosedException;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockHolderInfo;
import io.github.distlock.spi.LockInspector.ForceRelease;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.RedisServerExtension;
import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * What an operator does on one instance reaches the holders and waiters of every instance at once: a force release
 * tells each evicted holder (watchdog or a long fixed lease, here or on another client) within about a second — with
 * Redisson's default 30 s watchdog, whose lease check would take 10 s and a 60 s fixed lease's release a minute — and a
 * closed key turns away permit waiters and newcomers of both clients while its holders keep their permits.
 */
class ForceReleaseAndClosedPermitsReachEveryInstanceTest {

    /** Far below the lease check (a third of the 30 s watchdog): only the eviction message can be this quick. */
    static final Duration TOLD_WITHIN = Duration.ofMillis(1500);

    static final long SIXTY_SECONDS = TimeUnit.SECONDS.toNanos(60);

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    static RedissonClient clientA;
    static RedissonClient clientB;
    static RedissonLockProvider a;
    static RedissonLockProvider b;

    @BeforeAll
    static void start() {
        clientA = client();
        clientB = client();
        a = new RedissonLockProvider(clientA);
        b = new RedissonLockProvider(clientB);
        // both clients listen before anything is evicted
        await().atMost(Duration.ofSeconds(10)).until(() -> subscribers(Evictions.CHANNEL) == 2);
    }

    @AfterAll
    static void stop() {
        for (AutoCloseable provider : new AutoCloseable[] {a, b}) {
            if (provider != null) {
                ((RedissonLockProvider) provider).close();
            }
        }
        for (RedissonClient client : new RedissonClient[] {clientA, clientB}) {
            if (client != null) {
                client.shutdown();
            }
        }
    }

    private static RedissonClient client() {
        Config config = new Config();
        config.useSingleServer().setAddress(redis.uri()).setTimeout(10_000);
        return Redisson.create(config);
    }

    private static long subscribers(String channel) {
        List<?> reply = (List<?>) RespClient.callOnce(redis.port(), "PUBSUB", "NUMSUB", channel);
        return (Long) reply.get(1);
    }

    private static LockHandle hold(RedissonLockProvider provider, String key, LockType type, LockOwner owner,
            long leaseNanos, int permits) {
        LockHandle handle = provider.acquire(new LockRequest(key, 0, leaseNanos, false, type, owner, permits)).join();
        assertThat(handle).as(type + " of " + key).isNotNull();
        return handle;
    }

    /** A holder whose losses are recorded. */
    private record Held(LockHandle handle, List<String> lost) {

        static Held of(LockHandle handle) {
            List<String> lost = new CopyOnWriteArrayList<>();
            handle.whenLost(lost::add);
            return new Held(handle, lost);
        }
    }

    @Test
    void aForceReleaseTellsWatchdogAndSixtySecondHoldersOnBothClientsWithinASecond() {
        LockOwner[] owners = {LockOwner.next(), LockOwner.next(), LockOwner.next(), LockOwner.next()};
        Held aWatchdog = Held.of(hold(a, "told:a-watchdog", LockType.REENTRANT, owners[0], 0, 1));
        Held aFixed = Held.of(hold(a, "told:a-fixed", LockType.FAIR, owners[1], SIXTY_SECONDS, 1));
        Held bWatchdog = Held.of(hold(b, "told:b-watchdog", LockType.WRITE, owners[2], 0, 1));
        Held bFixed = Held.of(hold(b, "told:b-fixed", LockType.REENTRANT, owners[3], SIXTY_SECONDS, 2));
        String[] keys = {"told:a-watchdog", "told:a-fixed", "told:b-watchdog", "told:b-fixed"};
        RedissonLockProvider[] holders = {a, a, b, b};
        Held[] held = {aWatchdog, aFixed, bWatchdog, bFixed};

        for (int i = 0; i < keys.length; i++) {
            String owner = holders[i].ownerName(owners[i].id());
            // the one owner format: the name holders() lists, on either client
            assertThat(b.holders(keys[i])).extracting(LockHolderInfo::owner).containsExactly(owner);
            assertThat(owner).isEqualTo(holders[i].clientId() + ":" + owners[i].id());

            assertThat(a.forceRelease(keys[i])).extracting(LockHolderInfo::owner).containsExactly(owner);

            Held told = held[i];
            await(keys[i] + " told").atMost(TOLD_WITHIN).until(() -> !told.lost().isEmpty());
            assertThat(told.lost()).singleElement().asString().contains("force-released");
            assertThat(told.handle().lostWhileHeld()).isTrue();
            assertThat(a.holders(keys[i])).isEmpty();
        }
        // the keys are free for new owners on either client, and the evicted handles release nothing of theirs
        LockHandle next = hold(b, "told:a-watchdog", LockType.REENTRANT, LockOwner.next(), 0, 1);
        assertThat(aWatchdog.handle().release()).isFalse();
        assertThat(b.holders("told:a-watchdog")).hasSize(1);
        assertThat(next.release()).isTrue();
        for (Held evicted : List.of(aFixed, bWatchdog, bFixed)) {
            assertThat(evicted.handle().release()).isFalse();
        }
        assertThat(a.watchedLocks()).isZero();
    }

    @Test
    void aForceReleaseOfOneOwnerTellsOnlyThatOwner() {
        String key = "told:two-readers";
        LockOwner first = LockOwner.next();
        LockOwner second = LockOwner.next();
        Held evicted = Held.of(hold(b, key, LockType.READ, first, SIXTY_SECONDS, 1));
        Held kept = Held.of(hold(b, key, LockType.READ, second, 0, 1));

        assertThat(a.forceRelease(key, a.ownerName(first.id())).released()).as("another client's owner name").isFalse();
        ForceRelease released = a.forceRelease(key, b.ownerName(first.id()));

        assertThat(released.released()).isTrue();
        assertThat(released.holders()).extracting(LockHolderInfo::owner).containsExactly(b.ownerName(first.id()));
        await("the evicted reader told").atMost(TOLD_WITHIN).until(() -> !evicted.lost().isEmpty());
        assertThat(kept.lost()).isEmpty();
        assertThat(b.holders(key)).extracting(LockHolderInfo::owner).containsExactly(b.ownerName(second.id()));
        assertThat(evicted.handle().release()).isFalse();
        assertThat(kept.handle().release()).isTrue();
        assertThat(kept.lost()).isEmpty();
    }

    @Test
    void aClosedKeyTurnsAwayPermitWaitersAndNewcomersOfEveryClientWhileHoldersKeepTheirPermits() {
        String key = "closed:exports";
        LockHandle heldOnA = hold(a, key, LockType.REENTRANT, LockOwner.next(), 0, 2);
        LockHandle heldOnB = hold(b, key, LockType.REENTRANT, LockOwner.next(), 0, 2);
        CompletableFuture<LockHandle> waiterOnA = a.acquire(permit(key, Duration.ofSeconds(30)));
        CompletableFuture<LockHandle> waiterOnB = b.acquire(permit(key, Duration.ofSeconds(30)));

        long told = a.closeKey(key, "quota reached");

        assertThat(told).as("this client's permit waiter").isGreaterThanOrEqualTo(1);
        for (CompletableFuture<LockHandle> waiter : List.of(waiterOnA, waiterOnB)) {
            await().atMost(Duration.ofSeconds(2)).until(waiter::isDone);
            assertClosed(waiter, key);
        }
        // holders keep their permits: both still listed, one released normally, which frees a permit...
        assertThat(b.holders(key)).hasSize(2);
        assertThat(heldOnA.release()).isTrue();
        // ...that a newcomer of either client is still refused at once
        assertClosed(b.acquire(permit(key, Duration.ofSeconds(30))), key);
        assertClosed(a.acquire(permit(key, Duration.ZERO)), key);

        b.reopenKey(key);

        LockHandle newcomer = a.acquire(permit(key, Duration.ZERO)).join();
        assertThat(newcomer).as("a permit after the reopen").isNotNull();
        assertThat(newcomer.release()).isTrue();
        assertThat(heldOnB.release()).isTrue();
    }

    private static LockRequest permit(String key, Duration wait) {
        return new LockRequest(key, wait.toNanos(), 0, false, LockType.REENTRANT, LockOwner.next(), 2);
    }

    private static void assertClosed(CompletableFuture<LockHandle> acquisition, String key) {
        assertThatThrownBy(() -> acquisition.get(2, TimeUnit.SECONDS)).cause()
                .isInstanceOf(LockKeyClosedException.class)
                .hasMessage("Lock '" + key + "' is closed: quota reached");
    }
}

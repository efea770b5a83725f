package io.github.distlock.redisson;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockKeyClosedException;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.RedisServerExtension;
import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * A FAIR close names the waiters it took out and counts itself, so a late answer or a late close message cannot leave
 * a ghost entry or close a newcomer; and a key in braces ({@code {x}}) and the bare key ({@code x}) are locks of their
 * own although Redisson names their companions alike ({@code distlock_rw:{x}}). Each test states an interleaving or
 * input that would otherwise end in a lock granted to nobody, a wrong answer, or two holders.
 *
 * <p>Watchdog timeout {@value #WATCHDOG_MILLIS} ms: entries live 5 s (polls every 1.67 s), grants last 5 s — room for
 * the timings below on a busy machine. Close messages are played by hand where their delay matters, as
 * {@code HandoffLockTest} does: the close script's effect, then the message it would have published.
 */
class KeyCloseNamesItsWaitersAndBracedKeysAreLocksOfTheirOwnTest {

    static final long WATCHDOG_MILLIS = 15_000;

    private static long closeReopenAndLoseTheCount(String key, String reason) {
        return (Long) redis("EVAL", CLOSE_REOPEN_AND_LOSE_THE_COUNT, "4", "distlock_queue:{" + key + "}",
                "distlock_waiters:{" + key + "}", "distlock_closed:{" + key + "}", "distlock_closes:{" + key + "}",
                reason);
    }

    /**
     * The close script's effect on the queue (mark, count, queue emptied), and the reopen right after, in one step;
     * returns the close's number.
     */
    private static final String CLOSE_AND_REOPEN_WITHOUT_MESSAGE = """
            redis.call('set', KEYS[3], ARGV[1])
            local number = redis.call('incr', KEYS[4])
            redis.call('del', KEYS[1], KEYS[2])
            redis.call('del', KEYS[3])
            return number
            """;

    /**
     * The close script's effect (mark, count, queue emptied), the reopen, and the loss of the counter (what a failover
     * to a replica without the INCR, an eviction or a FLUSHALL of the counter does), in one step; the close's number.
     */
    private static final String CLOSE_REOPEN_AND_LOSE_THE_COUNT = """
            redis.call('set', KEYS[3], ARGV[1])
            local number = redis.call('incr', KEYS[4])
            redis.call('del', KEYS[1], KEYS[2])
            redis.call('del', KEYS[3])
            redis.call('del', KEYS[4])
            return number
            """;

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private final List<RedissonClient> clients = new ArrayList<>();
    private final List<RedissonLockProvider> providers = new ArrayList<>();
    private final List<AutoCloseable> proxies = new ArrayList<>();

    @BeforeEach
    void flush() {
        redis("FLUSHALL");
    }

    @AfterEach
    void stop() throws Exception {
        // the proxies first: a provider whose answers are dropped would retry its give-backs until it is closed
        for (AutoCloseable proxy : proxies) {
            proxy.close();
        }
        providers.forEach(RedissonLockProvider::close);
        clients.forEach(RedissonClient::shutdown);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // the close names its waiters

    /**
     * A waiter named by a close, whose poll after the reopen queued it again but whose answer was lost (a response
     * timeout: Redis carried the script out). {@code closed} skipped the leave (the last answered queueing was older
     * than the close) and {@code failed} only scheduled a poll that never ran (done): the entry stayed, and the next
     * release granted the lock to nobody for a whole grant.
     */
    @Test
    void aWaiterToldClosedWhosePollAnswerWasLostLeavesNoEntry() throws Exception {
        RedisTestProxy proxy = RedisTestProxy.start(redis.port());
        proxies.add(proxy);
        RedissonLockProvider a = provider(redis.uri(), 10_000);
        RedissonLockProvider b = provider(proxy.uri(), 500);
        LockHandle holder = a.acquire(fair("k", Duration.ZERO)).join();
        CompletableFuture<LockHandle> waiter = b.acquire(fair("k", Duration.ofSeconds(60)));
        awaitQueued("k", 1);
        String owner = onlyOwnerQueued("k");
        // from now on b's commands reach Redis, but their answers are lost (b gives up on each after 500 ms)
        proxy.dropCommandReplies();
        long closeNumber = closeAndReopenWithoutMessage("k", "sold out");
        // b's next poll queues the waiter again; its answer is lost
        awaitQueued("k", 1);
        deliverLateClose(b, closeNumber, owner);

        assertThatThrownBy(() -> waiter.get(5, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(LockKeyClosedException.class).hasMessage("Lock 'k' is closed: sold out");
        // the outage ends: the poll whose answer was lost fails (reset, or its 500 ms timeout), b's commands work again
        proxy.resetCommandConnections();
        // invariant: no queue entry remains for a waiter that was answered
        await("the entry of the waiter told closed, taken out").atMost(Duration.ofSeconds(3))
                .until(() -> (Long) redis("HLEN", "distlock_waiters:{k}"), n -> n == 0);
        assertThat(holder.release()).isTrue();
        assertThat(redis("HGETALL", "k")).as("the lock, not granted to the waiter told closed").isEqualTo(List.of());
    }

    /**
     * A close message read late (after the reopen) closes every waiter of the key on that client, also one that
     * started after the reopen and that the close never saw: it gets "closed" for an open key. The message names the
     * waiters the close took out; a waiter not named was not in the queue then (not started yet, granted, or skipped
     * as expired), and its own next script sees the closed mark if the key is still closed.
     */
    @Test
    void aLateCloseMessageDoesNotCloseAWaiterThatCameAfterTheReopen() throws Exception {
        RedissonLockProvider a = provider(redis.uri(), 10_000);
        RedissonLockProvider b = provider(redis.uri(), 10_000);
        LockHandle holder = a.acquire(fair("k", Duration.ZERO)).join();
        CompletableFuture<LockHandle> before = b.acquire(fair("k", Duration.ofSeconds(60)));
        awaitQueued("k", 1);
        String owner = onlyOwnerQueued("k");
        long closeNumber = closeAndReopenWithoutMessage("k", "sold out");
        // the key is open again; a new buyer queues (and the first one again, on its next poll)
        CompletableFuture<LockHandle> after = b.acquire(fair("k", Duration.ofSeconds(60)));
        awaitQueued("k", 2);
        deliverLateClose(b, closeNumber, owner);

        assertThatThrownBy(() -> before.get(5, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(LockKeyClosedException.class);
        await("the waiter that came after the reopen, still waiting").during(Duration.ofMillis(500))
                .atMost(Duration.ofSeconds(2)).until(() -> !after.isDone());
        assertThat(holder.release()).isTrue();
        LockHandle next = after.get(5, TimeUnit.SECONDS);
        assertThat(next).isNotNull();
        assertThat(next.release()).isTrue();
    }

    /**
     * A waiter named by close #1, whose close message is read late: meanwhile the key was reopened, the counter was
     * lost, and the waiter's poll queued it again, reading a count that started over. A count read below the close's
     * number is taken for "queued before the close" and skips the leave: the entry stays, and the holder's release
     * hands the lock to nobody (the grantee's waiter is gone) for a whole grant.
     */
    @Test
    void aWaiterQueuedAgainAfterTheCloseCountWasLostLeavesNoEntry() throws Exception {
        RedissonLockProvider a = provider(redis.uri(), 10_000);
        RedissonLockProvider b = provider(redis.uri(), 10_000);
        LockHandle holder = a.acquire(fair("k", Duration.ZERO)).join();
        CompletableFuture<LockHandle> waiter = b.acquire(fair("k", Duration.ofSeconds(60)));
        awaitQueued("k", 1);
        String owner = onlyOwnerQueued("k");
        long closeNumber = closeReopenAndLoseTheCount("k", "sold out");
        assertThat(closeNumber).isPositive();
        // b's next poll queues the waiter again, on an open key whose count reads 0
        awaitQueued("k", 1);
        deliverLateClose(b, closeNumber, owner);

        assertThatThrownBy(() -> waiter.get(5, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(LockKeyClosedException.class).hasMessage("Lock 'k' is closed: sold out");
        // invariant: no queue entry remains for a waiter that was answered
        await("the entry of the waiter told closed, taken out").atMost(Duration.ofSeconds(3))
                .until(() -> (Long) redis("HLEN", "distlock_waiters:{k}"), n -> n == 0);
        assertThat(holder.release()).isTrue();
        assertThat(redis("HGETALL", "k")).as("the lock, not granted to the waiter told closed").isEqualTo(List.of());
    }

    // ---------------------------------------------------------------------------------------------------------------
    // companions are named distlock_<what>:{<key>} — but RedissonObject.prefixName puts no braces around a key
    // that already has one, so key 'x' and key '{x}' get the same companions (distlock_rw:{x}, distlock_queue:{x},
    // distlock_closed:{x}, ...). Reachable with an empty distlock.key-prefix (the one checkNamespace guards) or a
    // prefix starting with '{'... only when keys without braces exist too; any application that takes both 'x' and '{x}'.

    /**
     * An operator force-releases the (stuck) WRITE lock of '{x}': that deletes 'distlock_rw:{x}', which is the
     * read/write hash of 'x' — 'x''s writer still works, and a second writer of 'x' gets in. The inspection of '{x}'
     * lists 'x''s writer too. A provider that refuses '{x}' ({@link IllegalArgumentException}, as it refuses its own
     * namespaces) passes.
     */
    @Test
    void aForceReleaseOfTheKeyInBracesLeavesTheWriterOfTheBareKeyAlone() {
        RedissonLockProvider a = provider(redis.uri(), 10_000);
        RedissonLockProvider b = provider(redis.uri(), 10_000);
        LockHandle writer = a.acquire(request("x", LockType.WRITE)).join();
        assertThat(writer).isNotNull();

        List<?> holdersOfBraced;
        try {
            holdersOfBraced = a.holders("{x}");
            a.forceRelease("{x}");
        }
        catch (IllegalArgumentException refused) {
            holdersOfBraced = List.of();
        }

        LockHandle second = b.acquire(request("x", LockType.WRITE)).join();
        try {
            assertThat(second).as("a second WRITE holder of 'x' while the first holds it, after a force-release of '{x}'")
                    .isNull();
        }
        finally {
            if (second != null) {
                second.release();
            }
        }
        assertThat(writer.release()).as("'x''s writer still holds it").isTrue();
        assertThat(holdersOfBraced).as("holders of '{x}' (nobody ever locked it)").isEmpty();
    }

    /** Closing FAIR key 'x' closes key '{x}' too: a buyer of '{x}' gets "closed" for a key nobody closed. */
    @Test
    void closingTheBareKeyDoesNotCloseTheKeyInBraces() {
        RedissonLockProvider a = provider(redis.uri(), 10_000);
        a.closeKey("x", "sold out");

        CompletableFuture<LockHandle> other;
        try {
            other = a.acquire(fair("{x}", Duration.ZERO));
        }
        catch (IllegalArgumentException refused) {
            return;
        }
        assertThat(other).as("FAIR '{x}', never closed").succeedsWithin(Duration.ofSeconds(5)).isNotNull();
        assertThat(other.join().release()).isTrue();
    }

    /**
     * 'x' and '{x}' share one FAIR queue: the release of 'x' hands 'x' to the head of that queue, a waiter of
     * '{x}', whose client ignores a grant of another key. Nobody waits for 'x', yet it is held by nobody for a grant
     * (5 s here, up to 5 s by default).
     */
    @Test
    void theReleaseOfTheBareKeyHandsItToNobody() throws Exception {
        RedissonLockProvider a = provider(redis.uri(), 10_000);
        RedissonLockProvider b = provider(redis.uri(), 10_000);
        RedissonLockProvider c = provider(redis.uri(), 10_000);
        LockHandle bare = a.acquire(fair("x", Duration.ZERO)).join();
        LockHandle braced;
        try {
            braced = a.acquire(fair("{x}", Duration.ZERO)).join();
        }
        catch (IllegalArgumentException refused) {
            assertThat(bare.release()).isTrue();
            return;
        }
        CompletableFuture<LockHandle> waiterOfBraced = b.acquire(fair("{x}", Duration.ofSeconds(60)));
        await().atMost(Duration.ofSeconds(5)).until(() -> (Long) redis("HLEN", "distlock_waiters:{x}") == 1);

        assertThat(bare.release()).isTrue();
        CompletableFuture<LockHandle> next = c.acquire(fair("x", Duration.ZERO));
        LockHandle taken = next.get(5, TimeUnit.SECONDS);
        assertThat(taken).as("FAIR 'x' after its only holder's release (nobody waits for 'x'; HGETALL x = %s)",
                redis("HGETALL", "x")).isNotNull();
        taken.release();
        assertThat(braced.release()).isTrue();
        waiterOfBraced.get(10, TimeUnit.SECONDS).release();
    }

    /**
     * Every path refuses '{x}' with one message — acquiring (every type, permits), closing, reopening, holders and
     * force release — and leaves 'x' as it was: its permit set ('distlock_permits:{x}', which '{x}' would share), its
     * write lock and its open key. A path that let '{x}' through would list 'x''s holders, evict them, or close 'x'.
     */
    @Test
    void aKeyThatIsOneWholeHashTagIsRefusedOnEveryPathAndLeavesTheBareKeyAlone() {
        RedissonLockProvider a = provider(redis.uri(), 10_000);
        LockHandle permit = a.acquire(new LockRequest("x", 0, 0, false, LockType.REENTRANT, LockOwner.next(), 2)).join();
        LockHandle writer = a.acquire(request("x", LockType.WRITE)).join();
        assertThat(permit).isNotNull();
        assertThat(writer).isNotNull();
        String refusal = "Lock key '{x}' is one whole hash tag: its Redis companions (read/write hash, FAIR queue, "
                + "closed mark, permits, fencing counter) would be those of the key 'x'. Put text outside the braces "
                + "(order:{x}) or use a key prefix (distlock.key-prefix, default 'lock:')";
        java.util.Map<String, org.assertj.core.api.ThrowableAssert.ThrowingCallable> paths = new java.util.LinkedHashMap<>();
        for (LockType type : LockType.values()) {
            paths.put("acquire " + type, () -> a.acquire(request("{x}", type)));
        }
        paths.put("acquire permits", () -> a.acquire(new LockRequest("{x}", 0, 0, false, LockType.REENTRANT,
                LockOwner.next(), 2)));
        paths.put("closeKey", () -> a.closeKey("{x}", "sold out"));
        paths.put("reopenKey", () -> a.reopenKey("{x}"));
        paths.put("holders", () -> a.holders("{x}"));
        paths.put("forceRelease", () -> a.forceRelease("{x}"));
        paths.put("forceRelease of an owner", () -> a.forceRelease("{x}", a.ownerName(1)));
        paths.forEach((path, call) -> assertThatThrownBy(call).as(path).isInstanceOf(IllegalArgumentException.class)
                .hasMessage(refusal));

        assertThat(redis("ZCARD", "distlock_permits:{x}")).as("x's permit set").isEqualTo(1L);
        assertThat(redis("EXISTS", "distlock_closed:{x}")).as("x's closed mark").isEqualTo(0L);
        assertThat(a.holders("x")).extracting(h -> h.mode()).containsExactlyInAnyOrder("permit", "write");
        assertThat(permit.lostWhileHeld()).isFalse();
        assertThat(writer.lostWhileHeld()).isFalse();
        assertThat(permit.release()).isTrue();
        assertThat(writer.release()).isTrue();
    }

    // ---------------------------------------------------------------------------------------------------------------

    private RedissonLockProvider provider(String address, int timeoutMillis) {
        Config config = new Config();
        config.setLockWatchdogTimeout(WATCHDOG_MILLIS);
        config.useSingleServer().setAddress(address).setTimeout(timeoutMillis).setRetryAttempts(0);
        RedissonClient client = Redisson.create(config);
        clients.add(client);
        RedissonLockProvider provider = new RedissonLockProvider(client);
        providers.add(provider);
        return provider;
    }

    private static LockRequest fair(String key, Duration wait) {
        return new LockRequest(key, wait.toNanos(), 0, false, LockType.FAIR, LockOwner.next());
    }

    private static LockRequest request(String key, LockType type) {
        return new LockRequest(key, 0, 0, false, type, LockOwner.next());
    }

    private static Object redis(String... command) {
        return RespClient.callOnce(redis.port(), command);
    }

    private static void awaitQueued(String key, int count) {
        await().atMost(Duration.ofSeconds(10))
                .until(() -> (Long) redis("HLEN", "distlock_waiters:{" + key + "}") == count);
    }

    /** The message the close of key 'k' (number {@code closeNumber}, naming {@code owner}) would have sent b, read now. */
    private static void deliverLateClose(RedissonLockProvider b, long closeNumber, String owner) {
        redis("PUBLISH", "distlock:handoff:" + b.clientId(), "c|1|k" + closeNumber + "|" + owner + "|sold out");
    }

    private static String onlyOwnerQueued(String key) {
        String field = ((List<?>) redis("HKEYS", "distlock_waiters:{" + key + "}")).get(0).toString();
        return field.substring(field.lastIndexOf(':') + 1);
    }

    /** The close script's effect (mark, count, queue emptied) and the reopen, without the message; the close's number. */
    private static long closeAndReopenWithoutMessage(String key, String reason) {
        return (Long) redis("EVAL", CLOSE_AND_REOPEN_WITHOUT_MESSAGE, "4", "distlock_queue:{" + key + "}",
                "distlock_waiters:{" + key + "}", "distlock_closed:{" + key + "}", "distlock_closes:{" + key + "}",
                reason);
    }
}

package io.github.distlock.redisson;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Interleavings of the FAIR hand-off lock that could end with a lock held by nobody for a whole lease, a waiter never
 * answered, or two holders. Each test states the interleaving and the outcome it rules out.
 *
 * <p>Two tools make the interleavings deterministic on a real redis-server: a grant published by a script of the test
 * (what the release script publishes, with a {@code grantedAt} in the past = a message that sat in a paused JVM), and
 * {@code CLIENT PAUSE ... WRITE} sent in the same TCP write as that script, so that the grantee's claim (an EVAL) is
 * held by Redis until the pause ends, whatever the grantee's speed.
 */
class HandoffRacesLeaveNoLockHeldByNobodyTest extends HandoffTestBase {

    @AfterEach
    void unpause() {
        // a pause left by a failed test would stall the next one (runs before the providers stop)
        RespClient.callOnce(redis.port(), "CLIENT", "UNPAUSE");
    }

    /**
     * What RELEASE's grant() does for {@code field} (the lock freed by whoever held it), publishing a grant whose
     * {@code grantedAt} is {@code agoMillis} in Redis's past: the message a grantee reads after a JVM pause of that
     * length. Returns the script, for {@link #pipeline}.
     */
    private static List<String> grantScript(String key, String field, String clientId, long owner, long ttlMillis,
            long agoMillis) {
        return List.of("EVAL", """
                redis.replicate_commands()
                local t = redis.call('time')
                local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
                redis.call('del', KEYS[1])
                redis.call('lrem', KEYS[2], 0, ARGV[1])
                redis.call('hdel', KEYS[3], ARGV[1])
                redis.call('hset', KEYS[1], ARGV[1], 1)
                redis.call('pexpire', KEYS[1], ARGV[2])
                redis.call('publish', ARGV[3], 'g|' .. ARGV[4] .. '|' .. ARGV[2] .. '|'
                    .. string.format('%.0f', now - tonumber(ARGV[5])) .. '|' .. KEYS[1])
                return 1""", "3", key, "distlock_queue:{" + key + "}", "distlock_waiters:{" + key + "}", field,
                String.valueOf(ttlMillis), "distlock:handoff:" + clientId, String.valueOf(owner),
                String.valueOf(agoMillis));
    }

    /**
     * Sends the commands in ONE write on one connection: Redis runs them all before it writes any published message to
     * a subscriber's socket (replies and messages go out in its beforeSleep), so a pause sent after a PUBLISH is in
     * force before the subscriber can react to the message.
     */
    private static void pipeline(List<List<String>> commands) throws IOException {
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        for (List<String> command : commands) {
            buffer.writeBytes(("*" + command.size() + "\r\n").getBytes(StandardCharsets.US_ASCII));
            for (String argument : command) {
                byte[] bytes = argument.getBytes(StandardCharsets.UTF_8);
                buffer.writeBytes(("$" + bytes.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
                buffer.writeBytes(bytes);
                buffer.writeBytes(new byte[] {'\r', '\n'});
            }
        }
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", redis.port()), 2_000);
            socket.setSoTimeout(2_000);
            socket.getOutputStream().write(buffer.toByteArray());
            socket.getOutputStream().flush();
            // each command here answers with one line (":1" or "+OK"); an error line fails the test
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream replies = new ByteArrayOutputStream();
            int lines = 0;
            while (lines < commands.size()) {
                int ch = in.read();
                if (ch < 0) {
                    break;
                }
                replies.write(ch);
                if (ch == '\n') {
                    lines++;
                }
            }
            String text = replies.toString(StandardCharsets.UTF_8);
            assertThat(text).as("pipeline replies").doesNotContain("-");
        }
    }

    /**
     * STUCK FOR A WHOLE LEASE. A grant message read late (elapsed >= half the grant) makes {@code granted()} take
     * {@code done} and wait for its claim (RENEW to the full lease). The caller stops waiting meanwhile (interrupt,
     * cancel, the template's give-up): {@code abandon()} finds {@code done} taken and does nothing; the claim then
     * lands, extends the lock to the caller's whole lease, and {@code result.complete(FULL)} is a no-op on the cancelled
     * future: nobody holds the lock, nobody releases it, and every other waiter waits out the whole lease (here 60 s).
     */
    @Test
    void aCallerThatStopsWaitingWhileItsLateGrantIsClaimedDoesNotLeaveTheLockHeldByNobody() throws Exception {
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        LockRequest request = fair("k", Duration.ofSeconds(30), Duration.ofSeconds(60));
        CompletableFuture<LockHandle> waiter = b.acquire(request);
        awaitQueued("k", 1);
        String field = b.clientId() + ":" + request.owner().id();
        // the holder's release granted the waiter 800 ms ago (1 s grant); b reads it now and must claim before using
        // it; Redis holds that claim for 1.5 s (CLIENT PAUSE WRITE also stops keys from expiring meanwhile)
        pipeline(List.of(grantScript("k", field, b.clientId(), request.owner().id(), 1_000, 800),
                List.of("CLIENT", "PAUSE", "1500", "WRITE")));
        // granted() has taken the waiter out of its map: its claim is on its way
        await().atMost(Duration.ofSeconds(1)).until(() -> b.handoffs().waiting() == 0);
        assertThat(waiter).as("waiting for the claim").isNotDone();
        // the caller stops waiting (what the template does on interrupt)
        waiter.cancel(false);
        redis("CLIENT", "UNPAUSE");
        // the old holder's release finds the lock gone (it was granted)
        assertThat(holder.release()).isFalse();
        // nobody will use the lock: another caller must get it within a grant or two, not after b's 60 s lease
        assertTheNextCallerTakes("k");
    }

    /**
     * A WAITER NEVER ANSWERED. The polls (and the last try at the deadline) of queued waiters run on the provider's
     * give-back executor; {@code close()} shuts it down with {@code shutdownNow()}, which drops the scheduled polls
     * without telling the waiters. A waiter of a closed provider whose lock is not handed to it waits forever, far past
     * its 1 s wait (and its entry stays queued until it expires).
     */
    @Test
    void aQueuedWaiterOfAClosedProviderIsAnsweredByItsDeadline() {
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        CompletableFuture<LockHandle> waiter = b.acquire(fair("k", Duration.ofSeconds(1), Duration.ZERO));
        awaitQueued("k", 1);
        b.close();
        // any answer will do (null, or an exception saying the provider is closed), but an answer
        await().atMost(Duration.ofSeconds(4)).until(waiter::isDone);
        assertThat(holder.release()).isTrue();
    }

    /**
     * TWO HOLDERS. A grant whose lease is the holder's whole (fixed) lease needs no claim, so {@code granted()} hands it
     * out without looking at how old it is. A grant message that sat in a paused JVM for longer than that lease is handed
     * to the caller although the lock expired long ago and is another caller's now: two holders, and nothing tells the
     * late one (a fixed lease has no monitor; its handle is not lost). The shorter-grant case of the same pause is
     * guarded (claim first, see granted()); this one is not.
     */
    @Test
    void aGrantReadAfterItsWholeLeaseRanOutIsNotHandedOut() throws Exception {
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        LockRequest request = fair("k", Duration.ofSeconds(30), Duration.ofMillis(400));
        CompletableFuture<LockHandle> waiter = b.acquire(request);
        awaitQueued("k", 1);
        // what happened while b was paused for 5 s: granted for 400 ms, expired, and taken by a caller of another
        // instance ("other:1"; a raw hash, since a FAIR acquisition of this test's clients would hand it to b's waiter)
        redis("EVAL", """
                redis.call('del', KEYS[1])
                redis.call('hset', KEYS[1], 'other:1', 1)
                redis.call('pexpire', KEYS[1], 30000)
                return 1""", "1", "k");
        assertThat(holder.release()).isFalse();
        // ... and the grant message, 5 s old, is read now (only its PUBLISH: the lock is the other caller's)
        redis("PUBLISH", "distlock:handoff:" + b.clientId(), "g|" + request.owner().id() + "|400|"
                + (redisMillis() - 5_000) + "|k");
        // b must not hand out a lock another caller holds: it either queues on or claims first (and finds it is not its own)
        await("b does not hand out lock k while other:1 holds it").during(Duration.ofMillis(700)).atMost(Duration.ofSeconds(2))
                .until(() -> !waiter.isDone() || waiter.join() == null);
        assertThat((Long) redis("HEXISTS", "k", "other:1")).as("the other caller still holds k").isEqualTo(1L);
        waiter.cancel(false);
    }

    /**
     * WRONG ANSWER, AND A LOCK HELD BY NOBODY FOR A GRANT. The holder's release granted the head waiter, whose message
     * was lost (its subscription was down); then the key was closed (the holder keeps its lock, says CLOSE). The
     * waiter's next poll runs ACQUIRE, which looks at the closed mark before it looks at the hash that names it: the
     * waiter is told "closed" and gives nothing back, though it was the holder, and the lock stays its own until the
     * grant runs out. The answer should be the lock (it was granted before the close), or, if "closed" is the answer, the
     * grant given back with it.
     */
    @Test
    void aWaiterGrantedBeforeTheKeyClosedIsNotToldClosedWithTheLockLeftInItsName() throws Exception {
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        LockRequest request = fair("k", Duration.ofSeconds(30), Duration.ZERO);
        CompletableFuture<LockHandle> waiter = b.acquire(request);
        awaitQueued("k", 1);
        String field = b.clientId() + ":" + request.owner().id();
        // the release's grant (a 1 s grant lease, as grant() writes it) without its PUBLISH, then the close
        redis("EVAL", """
                redis.call('del', KEYS[1])
                redis.call('lrem', KEYS[2], 0, ARGV[1])
                redis.call('hdel', KEYS[3], ARGV[1])
                redis.call('hset', KEYS[1], ARGV[1], 1)
                redis.call('pexpire', KEYS[1], 1000)
                return 1""", "3", "k", "distlock_queue:{k}", "distlock_waiters:{k}", field);
        assertThat(a.closeKey("k", "sold out")).as("waiters told").isZero();
        await().atMost(Duration.ofSeconds(2)).until(waiter::isDone);
        LockHandle handle = waiter.handle((granted, failure) -> granted).join();
        if (handle != null) {
            assertThat(handle.release()).isTrue();
        }
        else {
            assertThat((Long) redis("HEXISTS", "k", field))
                    .as("told closed, yet the lock names the waiter for another %s ms", redis("PTTL", "k"))
                    .isZero();
        }
        assertThat(holder.release()).isFalse();
    }

    /**
     * STUCK FOR A WHOLE LEASE (the FAIR contract fuzz hang of CI, traced: a last try sent before the grant message
     * arrived, carried out after the grantee had released). A queued waiter's poll is on its way to Redis (sent; here
     * held by the proxy, in the fuzz it waited for a pooled connection) when the holder's release grants it the lock.
     * The caller gets the lock, uses it and releases it on another connection. Then the poll runs: the lock is free and
     * nobody is queued, so it takes the lock for the waiter with its whole lease (60 s). Its answer ("acquired") finds
     * the waiter answered with a grant and took it for the same ownership: nobody held the lock, nobody released it.
     */
    @Test
    void aPollCarriedOutAfterTheGranteeReleasedDoesNotLeaveTheLockHeldByNobody() throws Exception {
        GrantedWithAPollHeld scenario = grantedWithAPollHeld(Duration.ofSeconds(60));
        assertThat(scenario.granted().release()).isTrue();
        assertThat(redis("EXISTS", "k")).as("free after the grantee's release").isEqualTo(0L);

        scenario.poll().letThrough();

        // the poll took the lock for the waiter (its answer is on its way), and nobody uses it: given back
        await("lock k given back, not held by nobody for 60 s").atMost(Duration.ofSeconds(5))
                .until(() -> redis("HGETALL", "k"), hash -> ((List<?>) hash).isEmpty());
        LockHandle next = c.acquire(fair("k", Duration.ZERO, Duration.ZERO)).get(5, TimeUnit.SECONDS);
        assertThat(next).as("the next caller takes k at once").isNotNull();
        assertThat(next.release()).isTrue();
    }

    /**
     * A GHOST IN THE QUEUE (the same interleaving with the lock held by the next caller when the late poll runs): the
     * poll queues the waiter again, after its caller got the lock and released it. Nobody refreshes or removes that
     * entry: a release within its life (a second here) grants the lock to nobody for a grant, and while other waiters
     * keep the queue alive it stays in the hash until a script happens to skip it.
     */
    @Test
    void aPollCarriedOutAfterTheGranteeReleasedLeavesNoEntryBehind() throws Exception {
        GrantedWithAPollHeld scenario = grantedWithAPollHeld(Duration.ZERO);
        assertThat(scenario.granted().release()).isTrue();
        LockHandle next = c.acquire(fair("k", Duration.ZERO, Duration.ZERO)).get(5, TimeUnit.SECONDS);
        assertThat(next).as("the next caller").isNotNull();
        // a live waiter behind it, whose polls keep the queue's keys from expiring
        CompletableFuture<LockHandle> behind = a.acquire(fair("k", Duration.ofSeconds(30), Duration.ZERO));
        awaitQueued("k", 1);

        scenario.poll().letThrough();

        // the late poll queues the waiter behind the live one; no script looks at the queue while the lock is held, so
        // only the waiter itself can take its entry out
        await("the late poll's entry taken out").atMost(Duration.ofSeconds(5))
                .until(() -> (Long) redis("HEXISTS", "distlock_waiters:{k}", scenario.field()), exists -> exists == 0L);
        assertThat(next.release()).isTrue();
        LockHandle third = behind.get(5, TimeUnit.SECONDS);
        assertThat(third).as("the live waiter, granted").isNotNull();
        assertThat(third.release()).isTrue();
    }

    /** A grant of key 'k' to a waiter of a proxied provider whose next poll is held on its way to Redis. */
    private record GrantedWithAPollHeld(LockHandle granted, RedisTestProxy.Hold poll, String field) {
    }

    /**
     * A waiter (of a provider through a proxy, lease {@code lease}) queued behind a holder of 'k'; its next poll (every
     * 333 ms) stops on its way to Redis; then the holder's release grants it the lock.
     */
    private GrantedWithAPollHeld grantedWithAPollHeld(Duration lease) throws Exception {
        RedisTestProxy proxy = RedisTestProxy.start(redis.port());
        RedissonLockProvider slow = providerThrough(proxy);
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        LockRequest request = fair("k", Duration.ofSeconds(30), lease);
        CompletableFuture<LockHandle> waiter = slow.acquire(request);
        awaitQueued("k", 1);
        String field = slow.clientId() + ":" + request.owner().id();
        RedisTestProxy.Hold poll = proxy.hold(field, false);
        assertThat(poll.held.await(5, TimeUnit.SECONDS)).as("a poll held").isTrue();
        assertThat(holder.release()).isTrue();
        LockHandle granted = waiter.get(5, TimeUnit.SECONDS);
        assertThat(granted).as("the grant").isNotNull();
        return new GrantedWithAPollHeld(granted, poll, field);
    }

    private static long redisMillis() {
        List<?> time = (List<?>) redis("TIME");
        return Long.parseLong(time.get(0).toString()) * 1000 + Long.parseLong(time.get(1).toString()) / 1000;
    }
}

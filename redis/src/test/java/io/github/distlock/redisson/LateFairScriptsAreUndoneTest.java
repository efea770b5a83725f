package io.github.distlock.redisson;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.config.ConstantDelay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A FAIR waiter's script carried out after the waiter was answered is undone once the caller is done
 * ({@code Waiter#lateScript}), in the interleavings that would otherwise leave a lock held by nobody for a whole lease,
 * or a ghost entry. Each test states its interleaving.
 *
 * <p>Tool: {@link RedisTestProxy}, between one provider's client and the redis-server, holds chosen commands on their way
 * to Redis (and, for one of them, its reply on its way back), several per test, in an order the test decides.
 */
class LateFairScriptsAreUndoneTest extends HandoffTestBase {

    /**
     * LOCK HELD BY NOBODY FOR A WHOLE LEASE (fenced caller, token {@code < 0}: {@code notHandedOut()}). A fenced FAIR
     * waiter's poll is on its way (sent before the grant message arrived) when the holder's release grants it the lock
     * (a 1 s grant; its 60 s lease must be claimed). The grantee's token script and its claim are slow (here held), so
     * the grant runs out: the token script finds the lock free and answers -1. Then the poll runs: the lock is free and
     * nobody is queued, so it takes the lock for the waiter with its whole 60 s lease; its answer arrives first and finds
     * the waiter answered with a grant, nobody let go yet: {@code lateScript(true)} does nothing ("the caller's release
     * runs after the script and undoes it"). Then the token's -1 arrives: {@code completeHandle} calls
     * {@code notHandedOut()}, which sets {@code letGo} and completes it, and the caller is told "not acquired" — no
     * release is ever sent, and nothing else undoes the poll: the lock is held by nobody for 60 s.
     */
    @Test
    void aLatePollAnsweredBeforeAFencedGranteesTokenSaysLostIsUndone() throws Exception {
        RedisTestProxy proxy = RedisTestProxy.start(redis.port());
        RedissonLockProvider slow = providerThrough(proxy, server -> { });
        warmUp(slow);
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        LockRequest request = new LockRequest("k", Duration.ofSeconds(30).toNanos(), Duration.ofSeconds(60).toNanos(),
                true, LockType.FAIR, LockOwner.next());
        String field = slow.clientId() + ":" + request.owner().id();
        CompletableFuture<LockHandle> waiter = slow.acquire(request);
        awaitQueued("k", 1);

        RedisTestProxy.Hold poll = proxy.hold(field, false);
        assertThat(poll.held.await(5, TimeUnit.SECONDS)).as("a poll held").isTrue();
        // the grantee's next commands: its token (reply held too), then its claim (held until the end)
        RedisTestProxy.Hold token = proxy.hold("redisson_lock_token", true);
        RedisTestProxy.Hold claim = proxy.hold(field, false);
        assertThat(holder.release()).isTrue();
        assertThat(token.held.await(5, TimeUnit.SECONDS)).as("the token script held").isTrue();
        assertThat(claim.held.await(5, TimeUnit.SECONDS)).as("the claim held").isTrue();
        // the 1 s grant runs out unclaimed
        await().atMost(Duration.ofSeconds(3)).until(() -> pttl("k") == -2L);

        token.letThrough();
        assertThat(token.replyArrived.await(5, TimeUnit.SECONDS)).as("the token script ran").isTrue();
        poll.letThrough();
        assertThat(poll.replyForwarded.await(5, TimeUnit.SECONDS)).as("the poll's answer sent to the client").isTrue();
        assertThat((Long) redis("HEXISTS", "k", field)).as("the late poll took the free lock").isEqualTo(1L);
        // the poll's answer is handled on the client's event loop as it is read; a race here only hides the defect
        await().pollDelay(Duration.ofMillis(300)).until(() -> true);
        token.letReplyThrough();

        assertThat(waiter.get(5, TimeUnit.SECONDS)).as("lost before its token: not handed out").isNull();
        // nobody holds the lock: the next caller must get it within a grant or two, not after 60 s
        assertTheNextCallerTakes("k");
    }

    /**
     * LOCK HELD BY NOBODY FOR A WHOLE LEASE (a failed poll before the waiter was answered). A queued waiter's poll is
     * sent and its answer never comes (a stalled connection; here held by the proxy past the client's 500 ms response
     * timeout, no retries). {@code failed()} finds the waiter not done and polls on: the failed script is forgotten,
     * although it may still run. The waiter is granted, its caller uses the lock and releases it; then the stalled poll
     * reaches Redis: the lock is free, it takes it for the waiter's whole 60 s lease, and nothing gives it back (its
     * answer went to a timed-out command). {@code lateScript(false)} covers a script failed after the waiter was
     * answered; a failure before, which may run just as late, sets nothing ({@code giveBackOnLetGo} would do).
     */
    @Test
    void aPollThatFailedBeforeTheGrantAndRunsAfterTheReleaseIsUndone() throws Exception {
        StalledPoll stalled = stalledPollThenGranted();
        RedisTestProxy.Hold poll = stalled.poll();
        LockHandle granted = stalled.granted();
        assertThat(granted.release()).isTrue();
        assertThat(redis("EXISTS", "k")).as("free after the grantee's release").isEqualTo(0L);

        // carried out now, it finds the waiter buried (its tombstone, the acquisition script's first check: EXISTS)
        carryOut(poll, "the stalled poll");

        // the stalled poll took the lock for nobody: given back (a couple of give-back rounds), not kept for 60 s
        assertTheNextCallerTakes("k");
    }

    /**
     * LOCK HELD BY NOBODY FOR A WHOLE LEASE (Redisson's retry: a script carried out twice). An acquisition's script is
     * sent and its answer does not come within the response timeout (a stalled connection; here held by the proxy):
     * Redisson sends it again on another connection (EVAL is retried: it is not in Redisson's NO_RETRY list), and that
     * copy answers "acquired". The caller uses the lock and releases it. Then the first copy reaches Redis: the lock is
     * free, it takes it with the whole 60 s lease, and its answer goes to a command Redisson already gave up on. The
     * waiter never hears of it — neither an answer nor a failure — so {@code lateScript} never runs. (Redisson's own
     * RLock scripts share the exposure; the FAIR scripts could be sent without retries, as the synced path already is,
     * so that a stalled script ends in a failure the waiter accounts for.)
     */
    @Test
    void aScriptRetriedByRedissonWhoseFirstCopyRunsAfterTheReleaseIsUndone() throws Exception {
        RedisTestProxy proxy = RedisTestProxy.start(redis.port());
        RedissonLockProvider slow = providerThrough(proxy, server -> server.setTimeout(500).setRetryAttempts(1)
                .setRetryDelay(new ConstantDelay(Duration.ofMillis(10))));
        warmUp(slow);
        LockRequest request = fair("k", Duration.ofSeconds(30), Duration.ofSeconds(60));
        String field = slow.clientId() + ":" + request.owner().id();
        RedisTestProxy.Hold first = proxy.holdAndCut(field);
        CompletableFuture<LockHandle> acquisition = slow.acquire(request);
        assertThat(first.held.await(5, TimeUnit.SECONDS)).as("the first copy held").isTrue();
        // if Redisson resends the script, the retried copy acquires; a provider that does not let it may fail the
        // acquisition instead (the connection died with the script unanswered): either way, no lock is left behind
        LockHandle handle = acquisition.handle((acquired, failure) -> acquired).get(5, TimeUnit.SECONDS);
        if (handle != null) {
            assertThat(handle.release()).isTrue();
        }
        assertThat(redis("EXISTS", "k")).as("free after the release").isEqualTo(0L);

        carryOut(first, "the first copy");

        assertTheNextCallerTakes("k");
    }
}

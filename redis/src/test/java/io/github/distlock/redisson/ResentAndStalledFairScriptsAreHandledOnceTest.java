package io.github.distlock.redisson;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.config.ConstantDelay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The FAIR lock's late-script undo holds when a script stalls past the give-back, when Redisson re-sends a script, and
 * when a first script's reply is late or keeps failing: each caller gets one true answer and no lock is left held by
 * nobody. Each test states its interleaving; tool: {@link RedisTestProxy}.
 */
class ResentAndStalledFairScriptsAreHandledOnceTest extends HandoffTestBase {

    /**
     * LOCK HELD BY NOBODY FOR A WHOLE LEASE (the give-back is bounded in time, the stalled script is not). As in
     * {@code LateFairScriptsAreUndoneTest#aPollThatFailedBeforeTheGrantAndRunsAfterTheReleaseIsUndone}: a queued
     * waiter's poll stalls on a connection that dies (held by the proxy), {@code failed()} marks the waiter unsettled, the waiter is
     * granted, its caller uses the lock and releases it; the let-go then gives back: release script, "not held", again
     * one period later (lease / 10, at most 1 s), "not held" again — and the give-back stops. Only THEN does the stalled
     * poll reach Redis (a little over a second after the release: a TCP retransmission or a stalled middlebox take as
     * long): the lock is free, it takes it with the waiter's whole 60 s lease, and nothing is left to give it back.
     * An undo that leans on the give-back passes the earlier test only because that test lets the poll through within
     * the give-back's one-second window. "Not held twice" proves that a script on the SAME connection has run; it proves nothing about one on a
     * connection that died.
     */
    @Test
    void aPollStalledPastTheGiveBacksTwoNotHeldAnswersIsUndone() throws Exception {
        StalledPoll stalled = stalledPollThenGranted();
        RedisTestProxy.Hold poll = stalled.poll();
        LockHandle granted = stalled.granted();
        // the grantee's claim of its 60 s lease has landed: no claim (a script that reads the hash) is left to count
        await().atMost(Duration.ofSeconds(3)).until(() -> pttl("k") > GRANT_MILLIS);
        // every script that looks at the lock hash runs HEXISTS: the grantee's release is one, each give-back round one
        long before = calls("hexists");
        assertThat(granted.release()).isTrue();
        assertThat(redis("EXISTS", "k")).as("free after the grantee's release").isEqualTo(0L);
        // the release and the give-back's two rounds ("not held", "not held"): after the second, it stops
        await("the give-back's two rounds").atMost(Duration.ofSeconds(5)).until(() -> calls("hexists") >= before + 3);
        // the second round's answer is on its way; nothing else is pending for this field
        await().pollDelay(Duration.ofMillis(300)).until(() -> true);

        // the acquisition script checks the waiter's tombstone first (EXISTS): counted, it says the poll has run
        carryOut(poll, "the stalled poll");
        assertThat(redis("HGETALL", "k")).as("the lock after the stalled poll ran").isEqualTo(List.of());

        assertTheNextCallerTakes("k");
    }

    /**
     * A RELEASE ANSWERING "NOT HELD" THOUGH NOTHING TOOK THE LOCK (Redisson re-sends the release script). The FAIR
     * release still goes through Redisson's retried EVAL. Its connection drops with the release sent and unanswered
     * (here: cut by the proxy, which still delivers the command to Redis); Redisson re-sends it on a new connection.
     * The first copy runs (the lock is deleted, or handed on), then the second finds the lock not held by the caller:
     * {@code release()} answers {@code false}, and the template reports a lease lost ({@code LEASE_LOST}, "was lost
     * before it was released") for a lock that was held to the end and released by its caller. Redisson's own RLock
     * unlock is sent without retry and answers a re-sent copy from its unlock latch; the FAIR release has neither.
     * Fixed by sending the release once: its lost answer is an exception (and a give-back in the background), never
     * "not held".
     */
    @Test
    void aReleaseResentByRedissonAfterItsFirstCopyRanStillAnswersReleased() throws Exception {
        RedisTestProxy proxy = RedisTestProxy.start(redis.port());
        RedissonLockProvider slow = providerThrough(proxy, server -> server.setTimeout(500).setRetryAttempts(1)
                .setRetryDelay(new ConstantDelay(Duration.ofMillis(10))));
        warmUp(slow);
        LockRequest request = fair("k", Duration.ZERO, Duration.ofSeconds(60));
        String field = slow.clientId() + ":" + request.owner().id();
        LockHandle handle = slow.acquire(request).get(5, TimeUnit.SECONDS);
        assertThat(handle).isNotNull();

        // the next command naming the field is the release (a full lease, unfenced: no claim, no token, no watchdog);
        // a copy re-sent by Redisson would be the one after it
        RedisTestProxy.Hold first = proxy.holdAndCut(field);
        RedisTestProxy.Hold resent = proxy.hold(field, false);
        CompletableFuture<Boolean> released = handle.releaseAsync();
        assertThat(first.held.await(5, TimeUnit.SECONDS)).as("the release held, its connection cut").isTrue();
        first.letThrough();
        await("the first copy released the lock").atMost(Duration.ofSeconds(5))
                .until(() -> (Long) redis("EXISTS", "k") == 0L);
        resent.letThrough();

        // its answer was lost: the release cannot say "released", but it must not say "not held" (LEASE_LOST)
        Object outcome = released.handle((answer, failure) -> (failure != null) ? failure : answer)
                .get(5, TimeUnit.SECONDS);
        assertThat(outcome).as("the release of a lock this caller held to the end and released")
                .isNotEqualTo(Boolean.FALSE);
    }

    /**
     * THE NO-RETRY ACQUISITION SCRIPT MUST NOT COST A WAIT ITS FIRST BLIP. A FAIR call willing to wait 30 s whose very
     * first script's reply is late (here: held past the 500 ms response timeout, then delivered; nothing is lost on
     * Redis's side, it ran and queued the waiter) must not fail at once with Redisson's
     * {@code RedisResponseTimeoutException} ("... after 0 of 4 retry attempts, is non-idempotent command: false ...").
     * A later poll's failure is ridden out (the waiter polls on until its deadline), and a REENTRANT call rides out the
     * same lost reply (Redisson retries it); the waiter has everything to handle a first attempt's failure the same way
     * ({@code unsettled}, the give-back on give-up).
     */
    @Test
    void aFirstScriptWhoseReplyIsLateDoesNotFailAThirtySecondWait() throws Exception {
        RedisTestProxy proxy = RedisTestProxy.start(redis.port());
        RedissonLockProvider slow = providerThrough(proxy, server -> server.setTimeout(500).setRetryAttempts(4)
                .setRetryDelay(new ConstantDelay(Duration.ofMillis(10))));
        warmUp(slow);
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        LockRequest request = fair("k", Duration.ofSeconds(30), Duration.ofSeconds(60));
        String field = slow.clientId() + ":" + request.owner().id();
        RedisTestProxy.Hold first = proxy.hold(field, true);
        CompletableFuture<LockHandle> waiter = slow.acquire(request);
        assertThat(first.held.await(5, TimeUnit.SECONDS)).as("the first script held").isTrue();
        first.letThrough();
        assertThat(first.replyArrived.await(5, TimeUnit.SECONDS)).as("the first script ran").isTrue();
        // past the response timeout, then the reply goes on
        await().pollDelay(Duration.ofMillis(800)).until(() -> true);
        first.letReplyThrough();
        await().pollDelay(Duration.ofMillis(200)).until(() -> true);
        assertThat(holder.release()).isTrue();

        Object outcome = waiter.handle((acquired, failure) -> (failure != null) ? failure : acquired)
                .get(10, TimeUnit.SECONDS);
        assertThat(outcome).as("a 30 s wait whose first script's reply was late").isInstanceOf(LockHandle.class);
        assertThat(((LockHandle) outcome).release()).isTrue();
    }

    /**
     * The other side of the test above: a first script that keeps failing (every try's connection dies) is tried
     * again as often as Redisson would have re-sent it (4), then fails the call with the failure — not after the
     * whole 60 s wait, as a queued waiter's polls would ride out an outage.
     */
    @Test
    void aFirstScriptThatKeepsFailingFailsTheCallAfterRedissonsRetriesNotAtItsDeadline() throws Exception {
        RedisTestProxy proxy = RedisTestProxy.start(redis.port());
        RedissonLockProvider slow = providerThrough(proxy, server -> server.setTimeout(500).setRetryAttempts(0));
        warmUp(slow);
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        LockRequest request = fair("k", Duration.ofSeconds(60), Duration.ZERO);
        String field = slow.clientId() + ":" + request.owner().id();
        List<RedisTestProxy.Hold> tries = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            tries.add(proxy.holdAndCut(field));
        }
        CompletableFuture<LockHandle> waiter = slow.acquire(request);

        Object outcome = waiter.handle((acquired, failure) -> (failure != null) ? failure : acquired)
                .get(20, TimeUnit.SECONDS);
        assertThat(outcome).as("a 60 s wait whose first script fails every time")
                .isInstanceOf(org.redisson.client.RedisException.class);
        // the first try and 4 more, then the give-back (whose scripts name the field too, and are cut as well)
        assertThat(tries.stream().filter(hold -> hold.held.getCount() == 0).count())
                .as("commands naming the waiter").isGreaterThanOrEqualTo(5L);
        assertThat(holder.release()).isTrue();
    }
}

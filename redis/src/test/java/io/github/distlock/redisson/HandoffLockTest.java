package io.github.distlock.redisson;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockKeyClosedException;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The FAIR lock's hand-off (HandoffLocks) on a real redis-server, looked at from Redis itself: who the hash names, the
 * queue and its entries, time to live. Each client is another "instance" (a client id of its own).
 */
class HandoffLockTest extends HandoffTestBase {

    /** Short, so that grants (a third of it) and entry refreshes are quick: 1 s grants, polls every 333 ms. */
    @Test
    void anUncontendedLockTouchesNoQueueAndLeavesNothingBehind() {
        LockHandle held = a.acquire(fair("k", Duration.ofSeconds(1), Duration.ZERO)).join();
        assertThat(held).isNotNull();
        assertThat(redis("HGETALL", "k")).asString().contains(a.clientId() + ":");
        assertThat(pttl("k")).as("watchdog lease").isBetween(WATCHDOG_MILLIS - 1000, WATCHDOG_MILLIS);
        assertThat(held.release()).isTrue();
        assertThat(keysLeft()).as("keys after the release").isEmpty();
    }

    /** The release makes the head waiter the owner in the same script: the hash names it before it even hears. */
    @Test
    void theReleaseHandsTheLockToTheHeadWaiterWhichClaimsItsLease() throws Exception {
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        LockRequest first = fair("k", Duration.ofSeconds(30), Duration.ZERO);
        CompletableFuture<LockHandle> waiter = b.acquire(first);
        awaitQueued("k", 1);
        CompletableFuture<LockHandle> second = c.acquire(fair("k", Duration.ofSeconds(30), Duration.ZERO));
        awaitQueued("k", 2);
        assertThat(holder.release()).isTrue();
        LockHandle granted = waiter.get(5, TimeUnit.SECONDS);
        assertThat(granted).isNotNull();
        assertThat((Long) redis("HEXISTS", "k", b.clientId() + ":" + first.owner().id())).isEqualTo(1L);
        assertThat(second).as("the second waiter, while the first holds").isNotDone();
        // the grant lease (1 s) is extended to the watchdog timeout by the grantee's claim
        await().atMost(Duration.ofSeconds(5)).until(() -> pttl("k") > GRANT_MILLIS);
        assertThat(redis("HLEN", "distlock_waiters:{k}")).as("entries left: the second waiter's").isEqualTo(1L);
        assertThat(granted.release()).isTrue();
        assertThat(second.get(5, TimeUnit.SECONDS)).isNotNull().satisfies(handle -> assertThat(handle.release()).isTrue());
        assertThat(keysLeft()).as("keys after the last release").isEmpty();
    }

    /**
     * A waiter whose process died after it queued (its entry still live) is granted the lock: the grant lasts a third of
     * the watchdog timeout, not the dead waiter's whole lease, and the next waiter gets the lock when it runs out.
     */
    @Test
    void aGrantToAWaiterThatIsGoneRunsOutWithinTheGrantLease() throws Exception {
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        long time = Long.parseLong(((List<?>) redis("TIME")).get(0).toString()) * 1000;
        // a waiter of another client that will never claim (nor refresh its entry): live for a minute, lease 30 s
        redis("RPUSH", "distlock_queue:{k}", "ghost:1");
        redis("HSET", "distlock_waiters:{k}", "ghost:1", (time + 60_000) + ":30000");
        CompletableFuture<LockHandle> next = b.acquire(fair("k", Duration.ofSeconds(30), Duration.ZERO));
        awaitQueued("k", 2);
        assertThat(holder.release()).isTrue();
        assertThat((Long) redis("HEXISTS", "k", "ghost:1")).as("the dead waiter was granted").isEqualTo(1L);
        assertThat(pttl("k")).as("the grant's lease").isBetween(1L, GRANT_MILLIS);
        long granted = System.nanoTime();
        LockHandle handle = next.get(5, TimeUnit.SECONDS);
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - granted);
        assertThat(handle).isNotNull();
        // not before the grant ran out (nobody took the dead waiter's lock from it) ...
        assertThat(waited).as("ms from the grant to the next owner").isGreaterThanOrEqualTo(GRANT_MILLIS - 100);
        // ... and well before the dead waiter's 30 s lease: a grant plus a poll of the next waiter, with slack
        assertThat(waited).isLessThan(GRANT_MILLIS + WATCHDOG_MILLIS);
        assertThat(handle.release()).isTrue();
    }

    /**
     * A waiter granted the lock keeps it as long as it holds it: its claim extends the 1 s grant to the watchdog timeout
     * (3 s), and the lease monitor renews it after that — checked from Redis for two watchdog timeouts.
     */
    @Test
    void aGrantedHolderKeepsItsLockPastTheGrantAndTheWatchdogTimeout() throws Exception {
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        LockRequest request = fair("k", Duration.ofSeconds(30), Duration.ZERO);
        CompletableFuture<LockHandle> waiter = b.acquire(request);
        awaitQueued("k", 1);
        assertThat(holder.release()).isTrue();
        LockHandle granted = waiter.get(5, TimeUnit.SECONDS);
        String field = b.clientId() + ":" + request.owner().id();
        await().during(Duration.ofMillis(2 * WATCHDOG_MILLIS)).atMost(Duration.ofMillis(2 * WATCHDOG_MILLIS + 2_000))
                .pollInterval(Duration.ofMillis(100))
                .until(() -> (Long) redis("HEXISTS", "k", field) == 1L);
        assertThat(granted.lostWhileHeld()).isFalse();
        assertThat(granted.stillHeld()).isTrue();
        assertThat(granted.release()).isTrue();
    }

    /** A grant whose message never arrives (a subscription that was down) is claimed by the waiter's next poll. */
    @Test
    void aGrantWhoseMessageIsLostIsClaimedAtTheNextPoll() throws Exception {
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        LockRequest request = fair("k", Duration.ofSeconds(30), Duration.ZERO);
        CompletableFuture<LockHandle> waiter = b.acquire(request);
        awaitQueued("k", 1);
        String field = b.clientId() + ":" + request.owner().id();
        // what the release script does, without the PUBLISH
        redis("EVAL", """
                redis.call('del', KEYS[1])
                redis.call('lpop', KEYS[2])
                redis.call('hdel', KEYS[3], ARGV[1])
                redis.call('hset', KEYS[1], ARGV[1], 1)
                redis.call('pexpire', KEYS[1], ARGV[2])
                return 1""", "3", "k", "distlock_queue:{k}", "distlock_waiters:{k}", field, "20000");
        // long before the 20 s grant could run out: the poll found itself named by the hash
        LockHandle handle = waiter.get(5, TimeUnit.SECONDS);
        assertThat(handle).isNotNull();
        assertThat(pttl("k")).as("claimed: the watchdog lease replaced the grant's").isBetween(GRANT_MILLIS,
                WATCHDOG_MILLIS);
        assertThat(holder.release()).as("the old holder's release").isFalse();
        assertThat(handle.release()).isTrue();
    }

    /** A waiter that stops waiting leaves the queue: the next release does not grant it. */
    @Test
    void aCancelledWaiterLeavesTheQueueAndIsNotGranted() throws Exception {
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        CompletableFuture<LockHandle> cancelled = b.acquire(fair("k", Duration.ofSeconds(30), Duration.ZERO));
        awaitQueued("k", 1);
        CompletableFuture<LockHandle> next = c.acquire(fair("k", Duration.ofSeconds(30), Duration.ZERO));
        awaitQueued("k", 2);
        cancelled.cancel(false);
        awaitQueued("k", 1);
        assertThat(holder.release()).isTrue();
        LockHandle handle = next.get(5, TimeUnit.SECONDS);
        assertThat(handle).isNotNull();
        assertThat((Long) redis("HLEN", "k")).isEqualTo(1L);
        assertThat(handle.release()).isTrue();
    }

    /**
     * Callers that try a held key with short waits queue and leave, again and again: each leaves its place in the
     * queue too, not only its entry. The queue list otherwise grew by one element per try for as long as the lock was
     * held (refreshed by every try, it never expired), and the release after a long hold popped them all in one script.
     */
    @Test
    void shortWaitsOnAHeldKeyLeaveNothingInTheQueue() throws Exception {
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        for (int i = 0; i < 200; i++) {
            // queued (the wait is longer than a round trip), then the deadline: a last try, or a leave
            assertThat(b.acquire(fair("k", Duration.ofMillis(2), Duration.ZERO)).get(5, TimeUnit.SECONDS)).isNull();
        }
        // the leaves are sent after each caller's answer: wait for them, not for a clock
        await().atMost(Duration.ofSeconds(5)).until(() -> (Long) redis("HLEN", "distlock_waiters:{k}") == 0);
        assertThat((Long) redis("LLEN", "distlock_queue:{k}")).as("queue elements left by 200 tries").isZero();
        assertThat(holder.release()).isTrue();
    }

    /** A fixed lease no longer than the grant is granted whole: no claim is needed, and none extends it. */
    @Test
    void aShortFixedLeaseIsGrantedWhole() throws Exception {
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        CompletableFuture<LockHandle> waiter = b.acquire(fair("k", Duration.ofSeconds(30), Duration.ofMillis(400)));
        awaitQueued("k", 1);
        assertThat(holder.release()).isTrue();
        LockHandle handle = waiter.get(5, TimeUnit.SECONDS);
        assertThat(pttl("k")).isBetween(1L, 400L);
        // it expires on time: the next caller gets it without a release
        await().atMost(Duration.ofSeconds(3)).until(() -> (Long) redis("EXISTS", "k") == 0);
        assertThat(handle.release()).as("a release after the lease ran out").isFalse();
    }

    /**
     * The sale ends with 180 buyers queued over two instances: closing tells them all at once. Measured from the close
     * call to the last waiter's failure, in this JVM (no HTTP); asserted well inside the 60 s the waiters would wait.
     */
    @Test
    void closingAnswers180QueuedWaitersAtOnce() throws Exception {
        LockHandle holder = a.acquire(fair("sale", Duration.ZERO, Duration.ZERO)).join();
        List<CompletableFuture<LockHandle>> waiters = new java.util.ArrayList<>();
        for (int i = 0; i < 180; i++) {
            waiters.add(((i % 2 == 0) ? b : c).acquire(fair("sale", Duration.ofSeconds(60), Duration.ZERO)));
        }
        awaitQueued("sale", 180);
        java.util.concurrent.ConcurrentLinkedQueue<Long> answered = new java.util.concurrent.ConcurrentLinkedQueue<>();
        waiters.forEach(waiter -> waiter.whenComplete((handle, failure) -> answered.add(System.nanoTime())));
        long hdelsBefore = calls("hdel");
        long closing = System.nanoTime();
        assertThat(a.closeKey("sale", "sold out")).isEqualTo(180);
        CompletableFuture.allOf(waiters.toArray(CompletableFuture[]::new)).handle((ignored, failure) -> null)
                .get(10, TimeUnit.SECONDS);
        long last = TimeUnit.NANOSECONDS.toMillis(answered.stream().mapToLong(Long::longValue).max().orElseThrow()
                - closing);
        System.out.printf("MEASURED close: 180 queued waiters over 2 clients answered %d ms after the close call%n", last);
        assertThat(waiters).allSatisfy(waiter -> assertThat(waiter).isCompletedExceptionally());
        assertThat(last).as("ms from the close to the last answer").isLessThan(1_000);
        // the close took them all out of the queue and said so: no waiter sends a script to leave it (each did once,
        // twice with its retry: 360 scripts competing with the 180 answers). Only a poll on its way at the close can
        // run into the closed mark and take its own entry out (an HDEL each): a few at most
        await("no leaves").during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2))
                .until(() -> calls("hdel") - hdelsBefore, hdels -> hdels <= 10);
        assertThat(holder.release()).isTrue();
        a.reopenKey("sale");
    }

    /**
     * A close message read after the key was reopened and the waiter queued again (it travels on another connection
     * than the poll's reply): the close had taken the waiter's old entry out, but the new one is there. The waiter,
     * told "closed", must take it out — or the next release grants the lock to nobody, and the key is stuck for a
     * grant. Played by hand: the close without its message, the reopen, the poll that queues again, then the message.
     */
    @Test
    void aCloseMessageReadAfterAReopenAndARequeueTakesTheNewEntryOut() throws Exception {
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        CompletableFuture<LockHandle> waiter = b.acquire(fair("k", Duration.ofSeconds(60), Duration.ZERO));
        awaitQueued("k", 1);
        String field = ((List<?>) redis("HKEYS", "distlock_waiters:{k}")).get(0).toString();
        String owner = field.substring(field.lastIndexOf(':') + 1);
        // the close script's effect, without its message
        String closeNumber = redis("INCR", "distlock_closes:{k}").toString();
        redis("SET", "distlock_closed:{k}", "sold out");
        redis("DEL", "distlock_queue:{k}", "distlock_waiters:{k}");
        // reopened, and the waiter's next poll (every 333 ms) queues it again
        redis("DEL", "distlock_closed:{k}");
        awaitQueued("k", 1);
        redis("PUBLISH", "distlock:handoff:" + b.clientId(), "c|1|k" + closeNumber + "|" + owner + "|sold out");

        assertThatThrownBy(() -> waiter.get(2, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(LockKeyClosedException.class).hasMessage("Lock 'k' is closed: sold out");
        await("the new entry taken out").atMost(Duration.ofMillis(500))
                .until(() -> (Long) redis("HLEN", "distlock_waiters:{k}"), n -> n == 0);
        assertThat(holder.release()).isTrue();
        assertThat(redis("EXISTS", "k")).as("the lock, not handed to the waiter that was told closed").isEqualTo(0L);
    }

    /** A close by an older version names no waiters: each waiter told takes its entry out, as all did then. */
    @Test
    void aCloseMessageOfAnOlderVersionStillAnswersAndEmptiesTheQueue() throws Exception {
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        CompletableFuture<LockHandle> waiter = b.acquire(fair("k", Duration.ofSeconds(60), Duration.ZERO));
        awaitQueued("k", 1);
        redis("PUBLISH", "distlock:handoff:" + b.clientId(), "c|1|k12|3 sold out");

        assertThatThrownBy(() -> waiter.get(2, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(LockKeyClosedException.class).hasMessage("Lock 'k' is closed: 12|3 sold out");
        await("its entry taken out").atMost(Duration.ofMillis(500))
                .until(() -> (Long) redis("HLEN", "distlock_waiters:{k}"), n -> n == 0);
        assertThat(holder.release()).isTrue();
        assertThat(redis("EXISTS", "k")).isEqualTo(0L);
    }

    /** Closing reaches waiters of every client through their own channel, and leaves no queue behind. */
    @Test
    void closingTellsTheWaitersOfEveryClient() throws Exception {
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        CompletableFuture<LockHandle> fromB = b.acquire(fair("k", Duration.ofSeconds(60), Duration.ZERO));
        CompletableFuture<LockHandle> fromC = c.acquire(fair("k", Duration.ofSeconds(60), Duration.ZERO));
        CompletableFuture<LockHandle> fromC2 = c.acquire(fair("k", Duration.ofSeconds(60), Duration.ZERO));
        awaitQueued("k", 3);
        assertThat(a.closeKey("k", "sold out ✓")).isEqualTo(3);
        for (CompletableFuture<LockHandle> waiter : List.of(fromB, fromC, fromC2)) {
            assertThatThrownBy(() -> waiter.get(2, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOf(LockKeyClosedException.class).hasMessage("Lock 'k' is closed: sold out ✓");
        }
        assertThat(redis("EXISTS", "distlock_queue:{k}", "distlock_waiters:{k}")).isEqualTo(0L);
        assertThat(redis("GET", "distlock_closed:{k}")).isEqualTo("sold out ✓");
        assertThat(b.handoffs().waiting()).isZero();
        assertThat(holder.release()).isTrue();
        a.reopenKey("k");
        assertThat(redis("EXISTS", "distlock_closed:{k}")).isEqualTo(0L);
        LockHandle again = b.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        assertThat(again).isNotNull();
        assertThat(again.release()).isTrue();
    }

    /**
     * The keys left in Redis but a queue's close count ({@code distlock_closes:{k}}), which outlives its queue by at
     * most twice the entry time to live (asserted here): it orders closes against later queueing.
     */
    private static List<Object> keysLeft() {
        List<Object> left = new java.util.ArrayList<>();
        for (Object key : (List<?>) redis("KEYS", "*")) {
            if (key.toString().startsWith("distlock_closes:")) {
                assertThat(pttl(key.toString())).as("time to live of " + key).isBetween(1L, 2 * GRANT_MILLIS);
            }
            else {
                left.add(key);
            }
        }
        return left;
    }
}

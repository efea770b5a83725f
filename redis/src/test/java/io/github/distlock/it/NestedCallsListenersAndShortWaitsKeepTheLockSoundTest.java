package io.github.distlock.it;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockBackendException;
import io.github.distlock.LockContext;
import io.github.distlock.LockEvent;
import io.github.distlock.LockListener;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.core.annotation.Order;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What a nested call, a listener or a short wait must not do to a lock: shorten, stretch or end the outer call's lease,
 * hand out a stale fencing token, keep a lock after a listener's Error, make healthy locks look lost, or read contention
 * as a backend failure. Watchdog timeout 1 s, so "longer than the watchdog" is quick.
 */
@SpringBootTest(classes = {LockTestApplication.class, NestedCallsListenersAndShortWaitsKeepTheLockSoundTest.Config.class},
        properties = "distlock.watchdog-timeout=1s")
class NestedCallsListenersAndShortWaitsKeepTheLockSoundTest extends RedisIntegrationTest {

    @Autowired
    Outer outer;

    @Autowired
    LockTemplate locks;

    @Autowired
    RecordingLockListener recorder;

    @Autowired
    Misbehaving misbehaving;

    private final List<HeldElsewhere> holders = new CopyOnWriteArrayList<>();

    @AfterEach
    void releaseHolders() {
        misbehaving.reset();
        holders.forEach(HeldElsewhere::releaseLater);
        await().atMost(Duration.ofSeconds(10)).until(() -> redisCommands.keys("lock:*").isEmpty());
        recorder.events.clear();
    }

    /** An inner fixed-lease call must not shorten the outer watchdog holder's lease, nor stop its renewal. */
    @Test
    void innerFixedLeaseDoesNotEndTheOuterWatchdogLock() {
        AtomicInteger contenderWins = new AtomicInteger();
        outer.watchdogAround(() -> {
            outer.inner().fixedLease300ms("k1");
            // the outer still runs for 3 watchdog timeouts: the key must stay its own the whole time
            await().during(Duration.ofMillis(3000)).atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(50))
                    .until(() -> {
                        if (tryOnce("mix:k1")) {
                            contenderWins.incrementAndGet();
                        }
                        return redisCommands.exists("lock:mix:k1") == 1;
                    });
            return null;
        }, "k1");
        assertThat(contenderWins).as("another caller took the lock while the outer method ran").hasValue(0);
    }

    /** The reverse: an inner watchdog call must neither shorten nor stretch the outer's fixed lease. */
    @Test
    void innerWatchdogCallLeavesTheOuterFixedLeaseAsItWas() {
        long[] ttlAfterInner = new long[1];
        outer.fixedLease3sAround(() -> {
            outer.inner().watchdog("k2");
            ttlAfterInner[0] = redisCommands.pttl("lock:mix:k2");
            return null;
        }, "k2");
        assertThat(ttlAfterInner[0]).as("the outer's 3 s lease, less the time the inner call took")
                .isBetween(2000L, 3000L);
    }

    /** After a nested fenced call the outer sees the newest token issued to it. */
    @Test
    void nestedFencedCallDoesNotLeaveTheOuterWithAStaleToken() {
        long[] tokens = new long[3];
        outer.fencedAround(() -> {
            tokens[0] = LockContext.fencingToken().orElseThrow();
            tokens[1] = outer.inner().fenced("k3");
            tokens[2] = LockContext.fencingToken().orElseThrow();
            return null;
        }, "k3");
        assertThat(tokens[2]).as("outer token after the inner call (outer before: %d, inner: %d)", tokens[0], tokens[1])
                .isGreaterThanOrEqualTo(tokens[1]);
    }

    /** A listener that throws an Error on acquisition must not keep the lock. */
    @Test
    void listenerErrorOnAcquiredDoesNotLeakTheLock() {
        misbehaving.errorOnAcquired = true;
        try {
            locks.execute("err", () -> "ran");
        }
        catch (AssertionError expected) {
            // whether the Error reaches the caller or not, the lock must be gone afterwards
        }
        await().atMost(Duration.ofSeconds(3)).until(() -> redisCommands.exists("lock:err") == 0);
    }

    /** A listener that blocks on a lost lease must not make the monitor report healthy locks as lost. */
    @Test
    void slowLeaseLostListenerDoesNotMakeHealthyLocksLookLost() throws Exception {
        misbehaving.blockOnLeaseLostMillis = 2500;
        hold("victim");
        hold("healthy-1");
        hold("healthy-2");
        redisCommands.del("lock:victim");

        await().atMost(Duration.ofSeconds(3)).until(() -> recorder.events.contains("leaseLost:lock:victim"));
        // the blocked listener call lasts 2.5 s, > 2 watchdog timeouts: healthy locks must still be confirmed
        await().during(Duration.ofMillis(3000)).atMost(Duration.ofSeconds(5))
                .until(() -> recorder.events.stream().noneMatch(e -> e.startsWith("leaseLost:lock:healthy")));
        assertThat(redisCommands.exists("lock:healthy-1", "lock:healthy-2")).isEqualTo(2);
    }

    /** Contention on a short wait always reads as "not acquired", never as a backend failure. */
    @Test
    void shortContendedWaitIsNeverABackendError() throws Exception {
        for (int k = 0; k < 4; k++) {
            hold("short-" + k);
        }
        int notAcquired = 0;
        for (int i = 0; i < 400; i++) {
            // 1-4 ms: about the time of the first try plus a subscription, where the two timers race
            LockOptions shortWait = LockOptions.waitFor(Duration.ofMillis(1 + i % 4));
            try {
                locks.execute("short-" + (i % 4), shortWait, () -> "never");
            }
            catch (LockAcquisitionException expected) {
                notAcquired++;
            }
            catch (LockBackendException wrong) {
                throw new AssertionError("attempt " + i + " read contention as a backend failure", wrong);
            }
        }
        assertThat(notAcquired).isEqualTo(400);
    }

    /** A counter that exists but is behind (failover to a lagging replica, older snapshot) hands out no old token. */
    @Test
    void fencingTokensKeepRisingWhenTheCounterFallsBehind() {
        LockOptions fenced = LockOptions.DEFAULTS.withFencing();
        long before = locks.execute("behind", fenced, () -> LockContext.fencingToken().orElseThrow());
        // what a promoted replica that missed the last increment holds: the counter one behind the last token
        redisCommands.set("redisson_lock_token:{lock:behind}", Long.toString(before - 1));

        long after = locks.execute("behind", fenced, () -> LockContext.fencingToken().orElseThrow());

        assertThat(after).isGreaterThan(before);
    }

    private boolean tryOnce(String key) {
        return locks.tryExecute(key, LockOptions.waitFor(Duration.ZERO), () -> Boolean.TRUE).acquired();
    }

    /** Holds {@code key} on a thread of its own until the test ends. */
    private void hold(String key) {
        holders.add(HeldElsewhere.hold(locks, key));
    }

    public static class Outer {

        private final Inner inner;

        public Outer(Inner inner) {
            this.inner = inner;
        }

        public Inner inner() {
            return inner;
        }

        @DistributedLock(key = "'mix:' + #id", leaseTime = DistributedLock.WATCHDOG)
        public <T> T watchdogAround(Supplier<T> body, String id) {
            return body.get();
        }

        @DistributedLock(key = "'mix:' + #id", leaseTime = 3, timeUnit = TimeUnit.SECONDS)
        public <T> T fixedLease3sAround(Supplier<T> body, String id) {
            return body.get();
        }

        @DistributedLock(key = "'mix:' + #id", fenced = true)
        public <T> T fencedAround(Supplier<T> body, String id) {
            return body.get();
        }
    }

    public static class Inner {

        @DistributedLock(key = "'mix:' + #id", leaseTime = 300)
        public void fixedLease300ms(String id) {
        }

        @DistributedLock(key = "'mix:' + #id", leaseTime = DistributedLock.WATCHDOG)
        public void watchdog(String id) {
        }

        @DistributedLock(key = "'mix:' + #id", fenced = true)
        public long fenced(String id) {
            return LockContext.fencingToken().orElseThrow();
        }
    }

    /** A listener that throws or blocks when told to. */
    public static class Misbehaving implements LockListener {

        volatile boolean errorOnAcquired;
        volatile long blockOnLeaseLostMillis;

        void reset() {
            errorOnAcquired = false;
            blockOnLeaseLostMillis = 0;
        }

        @Override
        public void onAcquired(LockEvent event) {
            if (errorOnAcquired) {
                throw new AssertionError("listener bug on " + event.key());
            }
        }

        @Override
        public void onLeaseLost(LockEvent event) {
            long block = blockOnLeaseLostMillis;
            if (block > 0) {
                CountDownLatch never = new CountDownLatch(1);
                try {
                    never.await(block, TimeUnit.MILLISECONDS);
                }
                catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    @TestConfiguration
    static class Config {

        @Bean
        Inner inner() {
            return new Inner();
        }

        @Bean
        Outer outer(Inner inner) {
            return new Outer(inner);
        }

        @Bean
        @Order(1)
        RecordingLockListener recordingLockListener() {
            return new RecordingLockListener();
        }

        @Bean
        @Order(2)
        Misbehaving misbehaving() {
            return new Misbehaving();
        }
    }

}

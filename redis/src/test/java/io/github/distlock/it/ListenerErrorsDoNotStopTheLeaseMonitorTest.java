package io.github.distlock.it;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockEvent;
import io.github.distlock.LockListener;
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
 * A listener's Error while the lease monitor reports an unconfirmed lock must not stop the monitor: a later loss is
 * still reported while its holder runs. The redis-server process is stopped ({@code kill -STOP}) for the first report,
 * which comes after a whole watchdog timeout without a confirmation: a short one (2 s), so that the test sits out 2 s,
 * not the 10 s that {@link TimedOutCallsOnAStalledRedisLeaveNoLockBehindTest} needs to tell a given-back lock from an
 * expired one.
 */
@SpringBootTest(classes = {LockTestApplication.class, ListenerErrorsDoNotStopTheLeaseMonitorTest.Config.class},
        properties = {"distlock.watchdog-timeout=2s", "spring.data.redis.timeout=300ms"})
class ListenerErrorsDoNotStopTheLeaseMonitorTest extends RedisIntegrationTest {

    @Autowired
    LockTemplate locks;

    @Autowired
    RecordingLockListener recorder;

    @Autowired
    ThrowingOnLost throwingOnLost;

    @AfterEach
    void cleanUp() {
        TimedOutCallsOnAStalledRedisLeaveNoLockBehindTest.signal("CONT");
        throwingOnLost.armed = false;
        recorder.events.clear();
    }

    @Test
    void listenerErrorDoesNotStopTheLeaseMonitor() throws Exception {
        CountDownLatch releaseFirst = new CountDownLatch(1);
        CountDownLatch firstHeld = new CountDownLatch(1);
        throwingOnLost.armed = true;
        CompletableFuture<Void> first = CompletableFuture.runAsync(() -> locks.run("m1", () -> {
            firstHeld.countDown();
            awaitQuietly(releaseFirst);
        }));
        assertThat(firstHeld.await(5, TimeUnit.SECONDS)).isTrue();
        TimedOutCallsOnAStalledRedisLeaveNoLockBehindTest.signal("STOP");
        try {
            // unconfirmed for a whole watchdog timeout: reported lost, and the listener throws an Error
            await().atMost(Duration.ofSeconds(20)).until(() -> recorder.events.contains("leaseLost:lock:m1"));
        }
        finally {
            TimedOutCallsOnAStalledRedisLeaveNoLockBehindTest.signal("CONT");
        }
        releaseFirst.countDown();
        first.handle((r, e) -> null).get(10, TimeUnit.SECONDS);

        CountDownLatch releaseSecond = new CountDownLatch(1);
        CountDownLatch secondHeld = new CountDownLatch(1);
        CompletableFuture<Void> second = CompletableFuture.runAsync(() -> locks.run("m2", () -> {
            secondHeld.countDown();
            awaitQuietly(releaseSecond);
        }));
        try {
            assertThat(secondHeld.await(5, TimeUnit.SECONDS)).isTrue();
            redisCommands.del("lock:m2");
            await().atMost(Duration.ofSeconds(8)).until(() -> recorder.events.contains("leaseLost:lock:m2"));
        }
        finally {
            releaseSecond.countDown();
            second.handle((r, e) -> null).get(10, TimeUnit.SECONDS);
        }
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    /** Throws an Error from onLeaseLost while armed. */
    static class ThrowingOnLost implements LockListener {

        volatile boolean armed;

        @Override
        public void onLeaseLost(LockEvent event) {
            if (armed) {
                throw new AssertionError("listener bug on " + event.key());
            }
        }
    }

    @TestConfiguration
    static class Config {

        @Bean
        @Order(1)
        RecordingLockListener recordingLockListener() {
            return new RecordingLockListener();
        }

        @Bean
        @Order(2)
        ThrowingOnLost throwingOnLost() {
            return new ThrowingOnLost();
        }
    }
}

package io.github.distlock.it;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Watchdog renewal and fixed leases with a 1 s watchdog timeout, so that "3x the timeout" takes seconds, not minutes.
 */
@SpringBootTest(classes = {LockTestApplication.class, LeaseAndWatchdogTest.Config.class},
        properties = "distlock.watchdog-timeout=1s")
@ExtendWith(OutputCaptureExtension.class)
class LeaseAndWatchdogTest extends RedisIntegrationTest {

    @Autowired
    Worker worker;

    @Autowired
    LockTemplate lockTemplate;

    @Autowired
    RecordingLockListener listener;

    /** Latches of holders a test started: opened after each test, so a failed test leaves no holder behind. */
    private final List<CountDownLatch> holders = new CopyOnWriteArrayList<>();

    @AfterEach
    void releaseHoldersAndClearEvents() {
        holders.forEach(CountDownLatch::countDown);
        await().atMost(Duration.ofSeconds(10)).until(() -> redisCommands.keys("lock:*").isEmpty());
        listener.events.clear();
    }

    private CountDownLatch holderLatch() {
        CountDownLatch latch = new CountDownLatch(1);
        holders.add(latch);
        return latch;
    }

    @Test
    void watchdogKeepsTheLockForThreeTimesItsTimeoutAndRenewsTheTtl() throws Exception {
        CountDownLatch finish = holderLatch();
        CompletableFuture<String> holding = CompletableFuture.supplyAsync(() -> worker.watchdog("long", finish));
        await().atMost(Duration.ofSeconds(5)).until(() -> redisCommands.exists("lock:work:long") == 1);
        long start = System.nanoTime();
        List<Long> ttls = new CopyOnWriteArrayList<>();
        int[] refused = {0};

        // for 3.5x the 1 s timeout: the key never expires, its TTL keeps coming back up, and nobody else gets in
        await().pollInterval(Duration.ofMillis(100)).atMost(Duration.ofSeconds(10))
                .until(() -> {
                    ttls.add(redisCommands.pttl("lock:work:long"));
                    assertThatThrownBy(() -> lockTemplate.run("work:long", LockOptions.waitFor(Duration.ZERO), () -> { }))
                            .isInstanceOf(LockAcquisitionException.class);
                    refused[0]++;
                    return System.nanoTime() - start > TimeUnit.MILLISECONDS.toNanos(3500);
                });

        assertThat(ttls).as("TTL of the held key, every 100 ms").allSatisfy(ttl -> assertThat(ttl).isBetween(1L, 1000L));
        // a loaded CI machine manages fewer polls; what matters is that every one of them was refused
        assertThat(refused[0]).isGreaterThanOrEqualTo(5);
        assertThat(renewals(ttls)).as("times the TTL went back up").isGreaterThanOrEqualTo(3);
        finish.countDown();
        assertThat(holding.get(5, TimeUnit.SECONDS)).isEqualTo("finished");
        assertThat(redisCommands.exists("lock:work:long")).isZero();
        assertThat(listener.events).startsWith("acquired:lock:work:long").endsWith("released:lock:work:long")
                .doesNotContain("leaseLost:lock:work:long");
    }

    @Test
    void fixedLeaseExpiresAfterTheLeaseEvenWhileTheMethodRuns() throws Exception {
        CountDownLatch finish = holderLatch();
        CompletableFuture<String> holding = CompletableFuture.supplyAsync(() -> worker.lease800ms("lease", finish));
        await().atMost(Duration.ofSeconds(5)).until(() -> redisCommands.exists("lock:work:lease") == 1);
        long start = System.nanoTime();
        assertThat(redisCommands.pttl("lock:work:lease")).isBetween(1L, 800L);

        await().pollInterval(Duration.ofMillis(20)).atMost(Duration.ofSeconds(3))
                .until(() -> redisCommands.exists("lock:work:lease") == 0);

        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(1500));
        assertThat(holding).as("the method is still running").isNotDone();
        finish.countDown();
        holding.get(5, TimeUnit.SECONDS);
    }

    @Test
    void lostLeaseKeepsTheMethodsResultReleasesNobodyElsesLockAndIsReported(CapturedOutput output) throws Exception {
        CountDownLatch finish = holderLatch();
        CompletableFuture<String> first = CompletableFuture.supplyAsync(() -> worker.lease800ms("lost", finish));
        await().atMost(Duration.ofSeconds(5)).until(() -> redisCommands.exists("lock:work:lost") == 1);

        // once the lease has run out, a second caller takes the lock and keeps it while the first one finishes
        CountDownLatch secondHolds = new CountDownLatch(1);
        CountDownLatch secondMayGo = new CountDownLatch(1);
        CompletableFuture<Void> second = CompletableFuture.runAsync(() -> lockTemplate.run("work:lost",
                LockOptions.waitFor(Duration.ofSeconds(5)).withLeaseTime(Duration.ofSeconds(30)), () -> {
                    secondHolds.countDown();
                    awaitLatch(secondMayGo);
                }));
        assertThat(secondHolds.await(5, TimeUnit.SECONDS)).isTrue();
        String secondOwner = redisCommands.hkeys("lock:work:lost").get(0);

        finish.countDown();
        assertThat(first.get(5, TimeUnit.SECONDS)).as("the first call's own result").isEqualTo("finished");

        assertThat(redisCommands.hkeys("lock:work:lost")).as("the second caller's lock").containsExactly(secondOwner);
        assertThat(listener.events).contains("leaseLost:lock:work:lost");
        assertThat(output).contains("WARN").contains("Lock 'lock:work:lost' was lost before it was released");
        secondMayGo.countDown();
        second.get(5, TimeUnit.SECONDS);
        assertThat(redisCommands.exists("lock:work:lost")).isZero();
    }

    @Test
    void aWatchdogLockLostWhileHeldIsReportedWhileTheMethodStillRuns(CapturedOutput output) throws Exception {
        CountDownLatch finish = holderLatch();
        CompletableFuture<String> holding = CompletableFuture.supplyAsync(() -> worker.watchdog("vanished", finish));
        await().atMost(Duration.ofSeconds(5)).until(() -> redisCommands.exists("lock:work:vanished") == 1);

        // what a failover to a replica that never saw the lock, or a restart without persistence, does to it
        redisCommands.del("lock:work:vanished");

        await().atMost(Duration.ofSeconds(3)).until(() -> listener.events.contains("leaseLost:lock:work:vanished"));
        assertThat(holding).as("the method is still running").isNotDone();
        assertThat(output).contains("Lock 'lock:work:vanished' was lost while its holder still runs");
        finish.countDown();
        assertThat(holding.get(5, TimeUnit.SECONDS)).isEqualTo("finished");
        assertThat(listener.events).as("reported once, not again at release")
                .containsExactly("acquired:lock:work:vanished", "leaseLost:lock:work:vanished");
    }

    private static int renewals(List<Long> ttls) {
        int renewals = 0;
        for (int i = 1; i < ttls.size(); i++) {
            if (ttls.get(i) > ttls.get(i - 1)) {
                renewals++;
            }
        }
        return renewals;
    }

    static void awaitLatch(CountDownLatch latch) {
        try {
            if (!latch.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("latch never opened");
            }
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        }
    }

    static class Worker {

        @DistributedLock(key = "'work:' + #name")
        public String watchdog(String name, CountDownLatch finish) {
            awaitLatch(finish);
            return "finished";
        }

        @DistributedLock(key = "'work:' + #name", leaseTime = 800)
        public String lease800ms(String name, CountDownLatch finish) {
            awaitLatch(finish);
            return "finished";
        }
    }

    @TestConfiguration
    static class Config {

        @Bean
        Worker worker() {
            return new Worker();
        }

        @Bean
        RecordingLockListener recordingLockListener() {
            return new RecordingLockListener();
        }
    }
}

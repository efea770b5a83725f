package io.github.distlock.types;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.it.LockTestApplication;
import io.github.distlock.it.RedisIntegrationTest;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Several keys at once: all or none, one global order, against a real redis-server.
 */
@SpringBootTest(classes = {LockTestApplication.class, MultiKeyTest.Config.class})
class MultiKeyTest extends RedisIntegrationTest {

    static final int ACCOUNTS = 8;

    @Autowired
    Bank bank;

    @Autowired
    LockTemplate locks;

    /**
     * Transfers between random pairs, in both directions, from 16 threads: without one global order, {A, B} and {B, A}
     * would deadlock until their waits ran out; without all-or-none, balances would be torn.
     */
    @Test
    void transfersInBothDirectionsNeitherDeadlockNorOverlapNorLoseMoney() throws Exception {
        long totalBefore = bank.total();
        ExecutorService pool = Executors.newFixedThreadPool(16);
        List<CompletableFuture<Void>> threads = new ArrayList<>();
        try {
            for (int t = 0; t < 16; t++) {
                threads.add(CompletableFuture.runAsync(() -> {
                    for (int i = 0; i < 60; i++) {
                        int from = ThreadLocalRandom.current().nextInt(ACCOUNTS);
                        int to = (from + 1 + ThreadLocalRandom.current().nextInt(ACCOUNTS - 1)) % ACCOUNTS;
                        bank.transfer(from, to, 1 + ThreadLocalRandom.current().nextInt(5));
                    }
                }, pool));
            }
            // a bound far below the 10 s wait each transfer has: a deadlock would show as a timeout here
            CompletableFuture.allOf(threads.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        }
        finally {
            pool.shutdownNow();
        }
        // read through the proxy's methods: its own fields are never set (CGLIB)
        assertThat(bank.overlaps()).as("two transfers touched one account at once").hasValue(0);
        assertThat(bank.total()).as("money created or lost").isEqualTo(totalBefore);
        assertThat(bank.transfers()).hasValue(16 * 60);
        assertThat(redisCommands.keys("lock:*")).isEmpty();
    }

    @Test
    void aKeyThatCannotBeHadReleasesTheOthersAndIsNamed() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch held = new CountDownLatch(1);
        CompletableFuture<Void> holder = CompletableFuture.runAsync(() -> locks.run("acct:b", () -> {
            held.countDown();
            try {
                release.await(30, TimeUnit.SECONDS);
            }
            catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }));
        try {
            assertThat(held.await(10, TimeUnit.SECONDS)).isTrue();

            assertThatThrownBy(() -> locks.execute(List.of("acct:c", "acct:a", "acct:b"), LockOptions.DEFAULTS, () -> "never"))
                    .isInstanceOf(LockAcquisitionException.class)
                    .hasMessageContaining("'lock:acct:b'");
            // acct:a was taken first (global order a, b, c) and must be given back; acct:c was never tried
            assertThat(redisCommands.keys("lock:*")).containsExactly("lock:acct:b");
        }
        finally {
            release.countDown();
            holder.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void keyExpressionsThatEvaluateToSeveralKeys() {
        assertThat(bank.heldDuringInlineList(1, 2)).containsExactlyInAnyOrder("lock:acct:1", "lock:acct:2");
        assertThat(bank.heldDuringCollection(List.of("x", "y", "x"))).containsExactlyInAnyOrder("lock:x", "lock:y");
        assertThatThrownBy(() -> bank.heldDuringCollection(java.util.Arrays.asList("x", null)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("heldDuringCollection()")
                .hasMessageContaining("is null");
        assertThatThrownBy(() -> bank.heldDuringCollection(List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("evaluates to an empty collection");
        assertThat(redisCommands.keys("lock:*")).isEmpty();
    }

    public static class Bank {

        private final long[] balances = new long[ACCOUNTS];
        private final AtomicIntegerArray inUse = new AtomicIntegerArray(ACCOUNTS);
        final AtomicInteger overlaps = new AtomicInteger();
        final AtomicInteger transfers = new AtomicInteger();

        public Bank() {
            java.util.Arrays.fill(balances, 1_000);
        }

        @DistributedLock(key = "{'acct:' + #from, 'acct:' + #to}", waitTime = 10, timeUnit = TimeUnit.SECONDS)
        public void transfer(int from, int to, long amount) {
            enter(from);
            enter(to);
            // unsynchronized read-modify-write: a second holder would lose an update
            long fromBalance = balances[from];
            long toBalance = balances[to];
            Thread.yield();
            balances[from] = fromBalance - amount;
            balances[to] = toBalance + amount;
            inUse.decrementAndGet(from);
            inUse.decrementAndGet(to);
            transfers.incrementAndGet();
        }

        private void enter(int account) {
            if (inUse.incrementAndGet(account) != 1) {
                overlaps.incrementAndGet();
            }
        }

        public long total() {
            long total = 0;
            for (long balance : balances) {
                total += balance;
            }
            return total;
        }

        public AtomicInteger overlaps() {
            return overlaps;
        }

        public AtomicInteger transfers() {
            return transfers;
        }

        @DistributedLock(key = "{'acct:' + #a, 'acct:' + #b}")
        public List<String> heldDuringInlineList(int a, int b) {
            return redisCommands.keys("lock:*");
        }

        @DistributedLock(key = "#keys")
        public List<String> heldDuringCollection(List<String> keys) {
            return redisCommands.keys("lock:*");
        }
    }

    @TestConfiguration
    static class Config {

        @Bean
        Bank bank() {
            return new Bank();
        }
    }
}

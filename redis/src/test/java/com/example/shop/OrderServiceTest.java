package com.example.shop;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockAcquisitionException;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.test.AutoConfigureInMemoryLocks;
import io.github.distlock.test.InMemoryLockProvider;
import io.github.distlock.test.LockAssert;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.redisson.api.RedissonClient;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A test as a user of the starter writes it, with no Redis anywhere: {@link AutoConfigureInMemoryLocks} puts the
 * application on in-memory locks, a test double of the payment gateway checks with {@link LockAssert} that the charge
 * runs under the order's lock, and every test ends with no lock held.
 */
@SpringBootTest(classes = {ShopApplication.class, OrderServiceTest.PaymentsConfig.class})
@AutoConfigureInMemoryLocks
class OrderServiceTest {

    @Autowired
    OrderService orders;

    @Autowired
    InMemoryLockProvider locks;

    @Autowired
    Payments payments;

    @AfterEach
    void noLockLeftBehind() {
        LockAssert.assertNoLocksHeld(locks);
        payments.whileCharging = null;
    }

    @Test
    void theChargeRunsUnderTheOrderLockOfItsUser() {
        payments.whileCharging = (userId, orderId) -> LockAssert.assertLocked("lock:order:" + userId);
        long order = orders.placeOrder(7);
        assertThat(payments.charged).containsEntry(7L, order);
        LockAssert.assertNotLocked();
    }

    @Test
    void aSecondSubmitOfTheSameUserIsRefusedWhileTheFirstRuns() throws Exception {
        CountDownLatch charging = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        payments.whileCharging = (userId, orderId) -> {
            if (userId == 7) {
                charging.countDown();
                await(finish);
            }
        };
        CompletableFuture<Long> first = CompletableFuture.supplyAsync(() -> orders.placeOrder(7));
        try {
            assertThat(charging.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(locks.isLocked("lock:order:7")).isTrue();
            assertThatThrownBy(() -> orders.placeOrder(7)).isInstanceOf(LockAcquisitionException.class)
                    .hasMessageContaining("lock:order:7");
            assertThat(orders.placeOrder(8)).as("another user meanwhile").isPositive();
        }
        finally {
            finish.countDown();
        }
        assertThat(first.get(10, TimeUnit.SECONDS)).isPositive();
    }

    @Test
    void noRedisClientIsEvenCreated(@Autowired ApplicationContext context) {
        assertThat(context.getBean(LockProvider.class)).isSameAs(locks);
        assertThat(context.getBeanNamesForType(RedissonClient.class)).isEmpty();
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await(10, TimeUnit.SECONDS);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    /** The test double of the payment gateway, and the test configuration that makes it a bean. */
    @TestConfiguration(proxyBeanMethods = false)
    static class PaymentsConfig {

        @Bean
        Payments paymentGateway() {
            return new Payments();
        }
    }

    /** Records the charges; runs a check while charging. */
    static class Payments implements PaymentGateway {

        final java.util.Map<Long, Long> charged = new java.util.concurrent.ConcurrentHashMap<>();
        volatile PaymentGateway whileCharging;

        @Override
        public void charge(long userId, long orderId) {
            PaymentGateway check = whileCharging;
            if (check != null) {
                check.charge(userId, orderId);
            }
            charged.put(userId, orderId);
        }
    }
}

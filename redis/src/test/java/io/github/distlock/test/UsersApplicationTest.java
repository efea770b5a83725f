package io.github.distlock.test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockAcquisitionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * A test as a user of the starter writes it: the application's own {@code @DistributedLock} service, the in-memory
 * provider as the {@code LockProvider} bean, and no Redis running anywhere (nothing listens where
 * {@code spring.data.redis.*} points: Redisson's client connects only when used, and the in-memory provider takes its
 * place).
 */
@SpringBootTest(classes = {UsersApplicationTest.ShopApplication.class, UsersApplicationTest.InMemoryLocks.class},
        properties = {"distlock.key-prefix=shop:", "spring.data.redis.port=1"})
class UsersApplicationTest {

    @Autowired
    OrderService orders;

    @Autowired
    InMemoryLockProvider locks;

    @AfterEach
    void nothingHeldAfterATest() {
        await().atMost(java.time.Duration.ofSeconds(5)).until(() -> locks.lockedKeys().isEmpty());
    }

    @Test
    void theServiceMethodRunsUnderItsLock() {
        assertThat(orders.place(7, () -> locks.isLocked("shop:order:7"))).as("locked while the method ran").isTrue();
        assertThat(locks.isLocked("shop:order:7")).as("after it returned").isFalse();
    }

    @Test
    void aSecondCallForTheSameUserIsRefusedWhileTheFirstRuns() throws Exception {
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        CompletableFuture<Boolean> first = CompletableFuture.supplyAsync(() -> orders.place(7, () -> {
            inside.countDown();
            return awaitQuietly(finish);
        }));
        assertThat(inside.await(10, TimeUnit.SECONDS)).isTrue();
        assertThatThrownBy(() -> orders.place(7, () -> true)).isInstanceOf(LockAcquisitionException.class)
                .hasMessageContaining("shop:order:7");
        assertThat(orders.place(8, () -> true)).as("another user meanwhile").isTrue();
        finish.countDown();
        assertThat(first.get(10, TimeUnit.SECONDS)).isTrue();
    }

    private static boolean awaitQuietly(CountDownLatch latch) {
        try {
            return latch.await(10, TimeUnit.SECONDS);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** What the user's test adds: locks in memory instead of Redis. */
    @TestConfiguration(proxyBeanMethods = false)
    static class InMemoryLocks {

        @Bean
        InMemoryLockProvider lockProvider() {
            return new InMemoryLockProvider();
        }
    }

    @SpringBootApplication
    static class ShopApplication {

        @Bean
        OrderService orderService() {
            return new OrderService();
        }
    }

    /** The user's service. */
    static class OrderService {

        /** Places an order; {@code body} stands for the work done under the lock. */
        @DistributedLock(key = "'order:' + #userId")
        public boolean place(long userId, BooleanSupplier body) {
            return body.getAsBoolean();
        }
    }
}

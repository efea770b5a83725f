package io.github.distlock.integration;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.config.EnableIntegration;
import org.springframework.integration.dsl.IntegrationFlow;
import org.springframework.integration.handler.advice.LockRequestHandlerAdvice;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.leader.event.LeaderEventPublisher;
import org.springframework.integration.support.MessageBuilder;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;
import org.springframework.integration.support.locks.LockRegistry;
import org.springframework.messaging.MessageChannel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Spring Integration's own lock users on the auto-configured {@link DistlockLockRegistry}, two application instances
 * on one real redis-server, auto-configured: {@code LockRequestHandlerAdvice} lets one message per key run at a time across both, and
 * {@code LockRegistryLeaderInitiator} grants one leader and hands over when the leader's context closes.
 */
class SpringIntegrationOnRedisTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    /** Shared by both instances (one JVM): how many handlers run at once per customer, and how many ran in all. */
    static final AtomicInteger running = new AtomicInteger();

    static final AtomicInteger mostRunningAtOnce = new AtomicInteger();

    static final AtomicInteger handled = new AtomicInteger();

    private static ConfigurableApplicationContext instance(String name) {
        return new SpringApplicationBuilder(App.class).web(WebApplicationType.NONE)
                .properties("spring.main.banner-mode=off", "instance=" + name,
                        // the JDBC backend is on the test class path (for LeaderHandOverMeasurement): no DataSource here
                        "spring.autoconfigure.exclude=" + LeaderProcessMain.NO_DATA_SOURCE)
                .run();
    }

    /**
     * One scenario for both, so that the two instances start once (a context start is most of this test's time).
     */
    @Test
    void theAdviceRunsOneMessagePerKeyAtATimeAndOneInstanceLeadsUntilItsContextCloses() throws Exception {
        Leadership.events.clear();
        ConfigurableApplicationContext first = instance("a");
        ConfigurableApplicationContext second = null;
        ExecutorService senders = Executors.newFixedThreadPool(4);
        try {
            assertThat(first.getBean(LockRegistry.class)).isInstanceOf(DistlockLockRegistry.class);
            await().atMost(Duration.ofSeconds(5)).until(() -> first.getBean(Leadership.class).leading);
            second = instance("b");

            List<Future<?>> sends = new ArrayList<>();
            for (ConfigurableApplicationContext context : List.of(first, second, first, second)) {
                MessageChannel orders = context.getBean("orders.input", MessageChannel.class);
                sends.add(senders.submit(() -> {
                    for (int i = 0; i < 5; i++) {
                        orders.send(MessageBuilder.withPayload("order " + i).setHeader("customer", "c-42").build());
                    }
                }));
            }
            for (Future<?> send : sends) {
                send.get(30, TimeUnit.SECONDS);
            }
            assertThat(handled).as("messages handled").hasValue(20);
            assertThat(mostRunningAtOnce).as("handlers of one customer running at once, both instances").hasValue(1);

            Leadership follower = second.getBean(Leadership.class);
            // the follower keeps trying (every busy wait) and is refused while the leader lives
            await().atMost(Duration.ofSeconds(5)).until(() -> follower.refusals.get() >= 3);
            assertThat(follower.leading).isFalse();
            long leaderToken = first.getBean(Leadership.class).token;
            assertThat(leaderToken).as("the leader's fencing token").isPositive();

            long closed = System.nanoTime();
            first.close();
            await().atMost(Duration.ofSeconds(5)).until(() -> follower.leading);
            long handOverMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - closed);
            assertThat(follower.token).as("the new leader's fencing token").isGreaterThan(leaderToken);
            assertThat(handOverMillis).as("hand-over after the leader's context closed, ms").isLessThan(2_000);
            // granted after the old leader's revocation: never two leaders
            assertThat(Leadership.events).containsExactly("a granted", "a revoked", "b granted");
        }
        finally {
            senders.shutdownNow();
            first.close();
            if (second != null) {
                second.close();
            }
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @EnableIntegration
    static class App {

        @Bean(destroyMethod = "shutdown")
        RedissonClient redissonClient() {
            Config config = new Config();
            // few connections: each instance opens its pools at startup, and this test needs little of them
            config.useSingleServer().setAddress(redis.uri()).setConnectionMinimumIdleSize(2)
                    .setSubscriptionConnectionMinimumIdleSize(1);
            return Redisson.create(config);
        }

        @Bean
        IntegrationFlow orders(LockRegistry<?> locks) {
            LockRequestHandlerAdvice oneAtATime = new LockRequestHandlerAdvice(locks,
                    message -> message.getHeaders().get("customer"));
            org.springframework.integration.core.GenericHandler<Object> work = (payload, headers) -> {
                int now = running.incrementAndGet();
                mostRunningAtOnce.accumulateAndGet(now, Math::max);
                // the work: long enough that an unguarded second handler would overlap it
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
                running.decrementAndGet();
                handled.incrementAndGet();
                return null;
            };
            return flow -> flow.handle(work, endpoint -> endpoint.advice(oneAtATime));
        }

        @Bean
        Leadership leadership(org.springframework.core.env.Environment environment) {
            return new Leadership(environment.getProperty("instance"));
        }

        @Bean
        LockRegistryLeaderInitiator leaderInitiator(LockRegistry<?> locks, Leadership leadership) {
            LockRegistryLeaderInitiator initiator = new LockRegistryLeaderInitiator(locks, leadership);
            initiator.setHeartBeatMillis(100);
            initiator.setBusyWaitMillis(50);
            initiator.setPublishFailedEvents(true);
            initiator.setLeaderEventPublisher(leadership);
            return initiator;
        }
    }

    /** The candidate of one instance: what it was granted, with the fencing token of its leadership. */
    static final class Leadership extends DefaultCandidate implements LeaderEventPublisher {

        static final List<String> events = new CopyOnWriteArrayList<>();

        private final String name;

        volatile boolean leading;

        volatile long token = -1;

        final AtomicInteger refusals = new AtomicInteger();

        private DistlockLockRegistry locks;

        Leadership(String name) {
            super(name, "nightly-report");
            this.name = name;
        }

        @org.springframework.beans.factory.annotation.Autowired
        void setLocks(DistlockLockRegistry locks) {
            this.locks = locks;
        }

        @Override
        public void onGranted(Context context) {
            // on the initiator's thread, which holds the lock: its token fences what the leader writes
            OptionalLong fencing = locks.fencingToken(getRole());
            token = fencing.orElse(-1);
            events.add(name + " granted");
            leading = true;
        }

        @Override
        public void onRevoked(Context context) {
            leading = false;
            events.add(name + " revoked");
        }

        @Override
        public void publishOnGranted(Object source, Context context, String role) {
        }

        @Override
        public void publishOnRevoked(Object source, Context context, String role) {
        }

        @Override
        public void publishOnFailedToAcquire(Object source, Context context, String role) {
            refusals.incrementAndGet();
        }
    }
}

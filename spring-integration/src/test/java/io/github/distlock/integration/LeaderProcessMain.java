package io.github.distlock.integration;

import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicBoolean;

import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.integration.config.EnableIntegration;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.leader.event.LeaderEventPublisher;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;

/**
 * One instance of a fleet electing a leader with {@link LockRegistryLeaderInitiator} on the auto-configured
 * {@link DistlockLockRegistry}, in its own JVM, for {@link LeaderHandOverMeasurement}. Arguments are Spring
 * properties ({@code name=value}). It prints {@code READY}, {@code REFUSED} (its first refused attempt),
 * {@code GRANTED <token> <epoch ms>}, {@code REVOKED <epoch ms>}, and while it leads {@code WRITE <token> <epoch ms>}
 * every 20 ms: the writes a leader would make to fenced storage.
 */
public final class LeaderProcessMain {

    /** Boot's DataSource auto-configuration, excluded where no database is used. */
    static final String NO_DATA_SOURCE = "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration";

    private LeaderProcessMain() {
    }

    public static void main(String[] args) {
        java.util.List<String> properties = new java.util.ArrayList<>(java.util.List.of("spring.main.banner-mode=off",
                "logging.level.root=WARN"));
        properties.addAll(java.util.List.of(args));
        if (properties.stream().noneMatch(property -> property.startsWith("spring.datasource.url="))) {
            // the JDBC backend is on the class path for the database runs: no DataSource without a database
            properties.add("spring.autoconfigure.exclude=" + NO_DATA_SOURCE);
        }
        new SpringApplicationBuilder(App.class).web(WebApplicationType.NONE).properties(properties.toArray(String[]::new))
                .run();
        System.out.println("READY");
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @EnableIntegration
    static class App {

        @Bean(destroyMethod = "shutdown")
        @ConditionalOnProperty("measure.redis")
        RedissonClient redissonClient(Environment environment) {
            Config config = new Config();
            config.setLockWatchdogTimeout(environment.getRequiredProperty("distlock.watchdog-timeout",
                    java.time.Duration.class).toMillis());
            config.useSingleServer().setAddress(environment.getRequiredProperty("measure.redis"))
                    .setConnectionMinimumIdleSize(2).setSubscriptionConnectionMinimumIdleSize(1);
            return Redisson.create(config);
        }

        @Bean
        Leader leader(DistlockLockRegistry locks) {
            return new Leader(locks);
        }

        @Bean
        LockRegistryLeaderInitiator leaderInitiator(DistlockLockRegistry locks, Leader leader, Environment environment) {
            LockRegistryLeaderInitiator initiator = new LockRegistryLeaderInitiator(locks, leader);
            initiator.setHeartBeatMillis(environment.getProperty("measure.heart-beat-ms", Long.class,
                    LockRegistryLeaderInitiator.DEFAULT_HEART_BEAT_TIME));
            initiator.setBusyWaitMillis(environment.getProperty("measure.busy-wait-ms", Long.class,
                    LockRegistryLeaderInitiator.DEFAULT_BUSY_WAIT_TIME));
            initiator.setPublishFailedEvents(true);
            initiator.setLeaderEventPublisher(leader);
            return initiator;
        }
    }

    static final class Leader extends DefaultCandidate implements LeaderEventPublisher {

        private final DistlockLockRegistry locks;

        private final AtomicBoolean refusedOnce = new AtomicBoolean();

        private volatile Thread writer;

        Leader(DistlockLockRegistry locks) {
            super(java.util.UUID.randomUUID().toString(), "scheduled-jobs");
            this.locks = locks;
        }

        @Override
        public void onGranted(Context context) {
            // on the initiator's thread, which holds the lock
            OptionalLong fencing = locks.fencingToken(getRole());
            long token = fencing.orElse(-1);
            System.out.println("GRANTED " + token + " " + System.currentTimeMillis());
            Thread thread = new Thread(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    System.out.println("WRITE " + token + " " + System.currentTimeMillis());
                    try {
                        Thread.sleep(20);
                    }
                    catch (InterruptedException ex) {
                        return;
                    }
                }
            }, "leader-writes");
            thread.setDaemon(true);
            writer = thread;
            thread.start();
        }

        @Override
        public void onRevoked(Context context) {
            Thread thread = writer;
            if (thread != null) {
                thread.interrupt();
                try {
                    thread.join();
                }
                catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
            }
            System.out.println("REVOKED " + System.currentTimeMillis());
            refusedOnce.set(false);
        }

        @Override
        public void publishOnGranted(Object source, Context context, String role) {
        }

        @Override
        public void publishOnRevoked(Object source, Context context, String role) {
        }

        @Override
        public void publishOnFailedToAcquire(Object source, Context context, String role) {
            if (refusedOnce.compareAndSet(false, true)) {
                System.out.println("REFUSED " + System.currentTimeMillis());
            }
        }
    }
}

package io.github.distlock.autoconfigure;

import java.time.Duration;

import io.github.distlock.spi.LockDurations;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.core.Ordered;

/**
 * Settings of distlock, under {@code distlock.*}. Invalid values fail the startup with the property's name.
 */
@ConfigurationProperties(prefix = "distlock")
public class DistlockProperties {

    /** Default order of the lock advisor: outside {@code @Transactional}, whose advisor has the lowest precedence. */
    public static final int DEFAULT_ORDER = Ordered.LOWEST_PRECEDENCE - 100;

    /**
     * Whether distlock is on: the @DistributedLock advisor, LockTemplate and the Redisson client it builds.
     */
    private boolean enabled = true;

    /**
     * Which lock backend to use when more than one is configured: redis, jdbc, zookeeper or etcd. Not set: the one
     * backend that is configured; two or more fail the startup.
     */
    private Backend backend;

    /**
     * Prefix of every lock's Redis key: the key of @DistributedLock(key = "'order:' + #id") with id 42 is
     * "lock:order:42".
     */
    private String keyPrefix = "lock:";

    /**
     * How long a caller waits for a lock when the annotation or call sets no wait time. 0 tries once and fails at once
     * (LockAcquisitionException).
     */
    private Duration waitTime = Duration.ZERO;

    /**
     * Fixed lease when the annotation or call sets none: the lock expires after it even if the method still runs. Not
     * set (the default): the watchdog renews the lock while its holder lives.
     */
    private Duration leaseTime;

    /**
     * How long the lock of a holder that died without releasing it lives on; renewed every third of it while the holder
     * lives. Redis: the watchdog timeout of the Redisson client distlock builds (not applied to a RedissonClient bean
     * of the application's own). Database: the renewal timeout of each row. ZooKeeper: the default session timeout.
     * etcd: the TTL of the session lease, rounded up to whole seconds.
     */
    private Duration watchdogTimeout = Duration.ofSeconds(30);

    /**
     * Order of the lock advisor among other advisors (lower runs outside). The default runs outside @Transactional,
     * so a transaction commits before its lock is released.
     */
    private int order = DEFAULT_ORDER;

    /**
     * Whether a lock taken while a Spring transaction is active on the thread (LockTemplate inside @Transactional, or
     * the advisor ordered inside it) is released only when that transaction completes, so that the next holder never
     * reads this holder's uncommitted state. With the default advisor order the lock is taken outside the transaction,
     * and this changes nothing.
     */
    private boolean releaseAfterTransaction = true;

    /** Settings of the Redisson client distlock builds (not applied to a RedissonClient bean of the application's own). */
    private final Redis redis = new Redis();

    /** Settings of the actuator endpoint 'distlock'. */
    private final Actuator actuator = new Actuator();

    /** Settings of the health indicator 'distlock'. */
    private final Health health = new Health();

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public Backend getBackend() {
        return backend;
    }

    public void setBackend(Backend backend) {
        this.backend = backend;
    }

    public String getKeyPrefix() {
        return keyPrefix;
    }

    public void setKeyPrefix(String keyPrefix) {
        this.keyPrefix = (keyPrefix != null) ? keyPrefix : "";
    }

    public Duration getWaitTime() {
        return waitTime;
    }

    /**
     * @throws IllegalArgumentException naming the property when negative or below 1 ms; longer than
     * {@link LockDurations#FOR_EVER} is taken as that
     */
    public void setWaitTime(Duration waitTime) {
        if (waitTime == null) {
            throw new IllegalArgumentException("distlock.wait-time must be 0 or at least 1 ms, was null");
        }
        this.waitTime = LockDurations.checked("distlock.wait-time", waitTime, "0");
    }

    public Duration getLeaseTime() {
        return leaseTime;
    }

    /**
     * @throws IllegalArgumentException naming the property when negative or below 1 ms (Redis counts leases in
     * milliseconds); longer than {@link LockDurations#FOR_EVER} is taken as that
     */
    public void setLeaseTime(Duration leaseTime) {
        this.leaseTime = LockDurations.checked("distlock.lease-time", leaseTime, "0 (or unset for the watchdog)");
    }

    public Duration getWatchdogTimeout() {
        return watchdogTimeout;
    }

    /**
     * @throws IllegalArgumentException naming the property outside {@link LockDurations#MIN_WATCHDOG_TIMEOUT} to
     * {@link LockDurations#MAX_WATCHDOG_TIMEOUT}
     */
    public void setWatchdogTimeout(Duration watchdogTimeout) {
        this.watchdogTimeout = LockDurations.checkedBetween("distlock.watchdog-timeout", watchdogTimeout,
                LockDurations.MIN_WATCHDOG_TIMEOUT, LockDurations.MAX_WATCHDOG_TIMEOUT);
    }

    public boolean isReleaseAfterTransaction() {
        return releaseAfterTransaction;
    }

    public void setReleaseAfterTransaction(boolean releaseAfterTransaction) {
        this.releaseAfterTransaction = releaseAfterTransaction;
    }

    public Redis getRedis() {
        return redis;
    }

    public Actuator getActuator() {
        return actuator;
    }

    public Health getHealth() {
        return health;
    }

    public int getOrder() {
        return order;
    }

    public void setOrder(int order) {
        this.order = order;
    }

    /** The lock backends distlock can run on; each needs its module and client on the class path. */
    public enum Backend {
        /** Redis through Redisson (the starter's default). */
        REDIS,
        /** A relational database table, through the application's DataSource (module distlock-jdbc). */
        JDBC,
        /** ZooKeeper through Apache Curator (module distlock-zookeeper). */
        ZOOKEEPER,
        /** etcd through jetcd (module distlock-etcd). */
        ETCD
    }

    /** Settings of the actuator endpoint {@code distlock} (sanitising: {@code management.endpoint.distlock.show-values}). */
    public static class Actuator {

        /**
         * Whether DELETE /actuator/distlock/{key} may take a lock away from its holder (on any instance). Off by
         * default: the holder keeps running and another caller may enter; use it for a lock whose holder is known to be
         * stuck or gone. Each force release is logged at WARN with the key and the holder it evicted.
         */
        private boolean forceReleaseEnabled = false;

        public boolean isForceReleaseEnabled() {
            return forceReleaseEnabled;
        }

        public void setForceReleaseEnabled(boolean forceReleaseEnabled) {
            this.forceReleaseEnabled = forceReleaseEnabled;
        }
    }

    /** Settings of the health indicator {@code distlock}. */
    public static class Health {

        /**
         * How long the health check waits for the lock backend to answer before reporting it DOWN. Keep it below the
         * health endpoint's own callers' timeouts (load balancer, Kubernetes probe).
         */
        private Duration timeout = Duration.ofSeconds(2);

        /** How far back lease losses count as recent in the health details. */
        private Duration recentLeaseLosses = Duration.ofMinutes(15);

        public Duration getTimeout() {
            return timeout;
        }

        public void setTimeout(Duration timeout) {
            this.timeout = LockDurations.checkedPositive("distlock.health.timeout", timeout);
        }

        public Duration getRecentLeaseLosses() {
            return recentLeaseLosses;
        }

        public void setRecentLeaseLosses(Duration recentLeaseLosses) {
            this.recentLeaseLosses = LockDurations.checkedPositive("distlock.health.recent-lease-losses",
                    recentLeaseLosses);
        }
    }

    /**
     * The failure budget of a lock call and the start-up policy of the Redisson client distlock builds. The command
     * timeout is Spring Boot's {@code spring.data.redis.timeout}.
     */
    public static class Redis {

        /**
         * How often a Redis command that could not be sent is tried again; unset: Redisson's default (4). Lock and
         * unlock scripts that were sent are never sent twice, so with retry-delay this bounds how long a call takes
         * against an unreachable Redis: measured ~2 s with 1 and 200ms, ~6-7 s with Redisson's defaults. It is also
         * how long a command waits for a free pooled connection under a burst: 1 x 200ms (and 2 x 500ms) failed
         * calls with "Unable to acquire connection" when 200 calls locked at once on a loaded 2-core machine, while
         * Redis was fine; Redisson's defaults did not. Lower it for fail-fast only if your bursts stay well below
         * the connection pool.
         */
        private Integer retryAttempts;

        /** Pause between those attempts; unset: Redisson's default (1-2 s, jittered). */
        private Duration retryDelay;

        /**
         * Whether the application must reach Redis to start. False (the default): the client connects on first use and
         * reconnects by itself, so an application started during a Redis outage runs, and its lock calls fail with
         * LockBackendException until Redis is back. True: the startup fails with a report when Redis is unreachable.
         */
        private boolean requireAtStartup = false;

        public Integer getRetryAttempts() {
            return retryAttempts;
        }

        public void setRetryAttempts(Integer retryAttempts) {
            if (retryAttempts != null && retryAttempts < 0) {
                throw new IllegalArgumentException("distlock.redis.retry-attempts must be 0 or more, was " + retryAttempts);
            }
            this.retryAttempts = retryAttempts;
        }

        public Duration getRetryDelay() {
            return retryDelay;
        }

        public void setRetryDelay(Duration retryDelay) {
            // Redisson counts the delay in milliseconds and waits it between attempts of every command: bounded so that
            // neither its conversion nor a call's wait can overflow
            this.retryDelay = (retryDelay != null) ? LockDurations.checkedBetween("distlock.redis.retry-delay",
                    retryDelay, Duration.ZERO, Duration.ofMinutes(10)) : null;
        }

        public boolean isRequireAtStartup() {
            return requireAtStartup;
        }

        public void setRequireAtStartup(boolean requireAtStartup) {
            this.requireAtStartup = requireAtStartup;
        }
    }
}

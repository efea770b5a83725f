package io.github.distlock.autoconfigure;

import java.time.Duration;

import io.github.distlock.spi.LockDurations;

import org.jspecify.annotations.Nullable;
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
     * Whether distlock is on: the @DistributedLock advisor, LockTemplate and the backend's client it builds.
     */
    private boolean enabled = true;

    /**
     * Which lock backend to use when more than one is configured, by its name: redis, jdbc, zookeeper, etcd, or the
     * name of a third party's backend. Not set: the one backend that is configured; two or more fail the startup.
     */
    private @Nullable String backend;

    /**
     * Prefix of every lock's key in the backend: the key of @DistributedLock(key = "'order:' + #id") with id 42 is
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
    private @Nullable Duration leaseTime;

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

    /** Settings of the actuator endpoint 'distlock'. */
    private final Actuator actuator = new Actuator();

    /** Settings of the health indicator 'distlock'. */
    private final Health health = new Health();

    /** Settings of the application's caches. */
    private final Cache cache = new Cache();

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    /**
     * The chosen backend's name as written, or {@code null} when none is chosen.
     * @return the value of {@code distlock.backend}, stripped; {@code null} when unset or blank
     */
    public @Nullable String getBackend() {
        return backend;
    }

    public void setBackend(@Nullable String backend) {
        this.backend = (backend == null || backend.isBlank()) ? null : backend.strip();
    }

    public String getKeyPrefix() {
        return keyPrefix;
    }

    public void setKeyPrefix(@Nullable String keyPrefix) {
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

    public @Nullable Duration getLeaseTime() {
        return leaseTime;
    }

    /**
     * @throws IllegalArgumentException naming the property when negative or below 1 ms (Redis counts leases in
     * milliseconds); longer than {@link LockDurations#FOR_EVER} is taken as that
     */
    public void setLeaseTime(@Nullable Duration leaseTime) {
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

    public Actuator getActuator() {
        return actuator;
    }

    public Health getHealth() {
        return health;
    }

    public Cache getCache() {
        return cache;
    }

    public int getOrder() {
        return order;
    }

    public void setOrder(int order) {
        this.order = order;
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

    /** Settings of the application's caches (Spring's cache abstraction). */
    public static class Cache {

        /** Loading each missing cache entry once across instances. */
        private final SingleFlight singleFlight = new SingleFlight();

        public SingleFlight getSingleFlight() {
            return singleFlight;
        }
    }

    /** Loading each missing cache entry once across instances, under the entry's distributed lock. */
    public static class SingleFlight {

        /** The default of {@code distlock.cache.single-flight.wait-time}. */
        public static final Duration DEFAULT_WAIT_TIME = Duration.ofSeconds(10);

        /**
         * Whether every CacheManager bean's caches load a missing entry under the entry's distributed lock, so that
         * a @Cacheable(sync = true) method runs once per missing entry across all instances; the others wait and read
         * what it stored. With a cache each instance keeps for itself (Caffeine, ConcurrentMap) each instance still
         * loads its own copy, one at a time across instances.
         */
        private boolean enabled = false;

        /**
         * How long a caller waits for another caller (on any instance) that is loading the same entry, before it
         * fails with CacheLoadTimeoutException naming the cache and the key. Make it longer than the slowest load.
         */
        private Duration waitTime = DEFAULT_WAIT_TIME;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public Duration getWaitTime() {
            return waitTime;
        }

        /**
         * @throws IllegalArgumentException naming the property when null, zero, negative or below 1 ms: waiting is
         * what lets a caller read the entry another caller loads
         */
        public void setWaitTime(Duration waitTime) {
            this.waitTime = LockDurations.checkedPositive("distlock.cache.single-flight.wait-time", waitTime);
        }
    }
}

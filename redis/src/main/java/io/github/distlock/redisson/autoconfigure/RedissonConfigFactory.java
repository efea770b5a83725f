package io.github.distlock.redisson.autoconfigure;

import java.time.Duration;
import java.util.List;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.TrustManagerFactory;

import io.github.distlock.autoconfigure.DistlockProperties;
import io.github.distlock.spi.LockDurations;

import org.redisson.config.BaseConfig;
import org.redisson.config.Config;
import org.redisson.config.ConstantDelay;
import org.redisson.config.SentinelServersConfig;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.boot.data.redis.autoconfigure.DataRedisProperties;
import org.springframework.boot.ssl.SslBundle;
import org.springframework.boot.ssl.SslOptions;

/**
 * Maps Spring Boot's Redis connection settings onto a Redisson {@link Config}: standalone, sentinel, cluster and
 * master/replica (as Redisson's replicated mode, which finds the master itself), credentials, database, timeouts,
 * client name and SSL (an SSL bundle's key and trust managers, protocols and ciphers).
 */
final class RedissonConfigFactory {

    private static final Duration MAX_INT_MILLIS = Duration.ofMillis(Integer.MAX_VALUE);


    private RedissonConfigFactory() {
    }

    /** A Redisson config and the settings of the server mode it uses. */
    record RedissonSettings(Config config, BaseConfig<?> server) {
    }

    static RedissonSettings create(DataRedisConnectionDetails details, DataRedisProperties properties,
            DistlockProperties distlock, DistlockRedisProperties redis) {
        Config config = new Config();
        config.setLockWatchdogTimeout(distlock.getWatchdogTimeout().toMillis());
        // Redisson sizes its pools for a big machine (32 Netty event loops, 16 callback threads) whatever the cores:
        // on 2 cores that measured 10.7k lock cycles/s at 8 threads against 16.1k with these caps (docs/performance.md).
        // Only thread counts: lock scripts, leases, the watchdog and ownership are untouched.
        // at least 2: a one-CPU container still needs an event loop free while another waits on a callback
        int cpus = Math.max(2, Runtime.getRuntime().availableProcessors());
        config.setNettyThreads(Math.min(32, 2 * cpus));
        config.setThreads(Math.min(16, cpus));
        config.setUsername(details.getUsername());
        config.setPassword(details.getPassword());

        SslBundle bundle = details.getSslBundle();
        boolean ssl = bundle != null || properties.getSsl().isEnabled()
                || (properties.getUrl() != null && properties.getUrl().startsWith("rediss://"));
        String scheme = ssl ? "rediss://" : "redis://";
        if (bundle != null) {
            applySsl(config, bundle);
        }

        BaseConfig<?> server;
        if (details.getSentinel() != null) {
            DataRedisConnectionDetails.Sentinel sentinel = details.getSentinel();
            SentinelServersConfig sentinelConfig = config.useSentinelServers()
                    .setMasterName(sentinel.getMaster())
                    .setDatabase(sentinel.getDatabase());
            sentinelConfig.setSentinelAddresses(addresses(scheme, sentinel.getNodes()));
            if (sentinel.getUsername() != null) {
                sentinelConfig.setSentinelUsername(sentinel.getUsername());
            }
            if (sentinel.getPassword() != null) {
                sentinelConfig.setSentinelPassword(sentinel.getPassword());
            }
            server = sentinelConfig;
        }
        else if (details.getCluster() != null) {
            var cluster = config.useClusterServers();
            cluster.setNodeAddresses(addresses(scheme, details.getCluster().getNodes()));
            server = cluster;
        }
        else if (details.getMasterReplica() != null) {
            var replicated = config.useReplicatedServers();
            replicated.setNodeAddresses(addresses(scheme, details.getMasterReplica().getNodes()));
            replicated.setDatabase(properties.getDatabase());
            server = replicated;
        }
        else {
            DataRedisConnectionDetails.Standalone standalone = details.getStandalone();
            server = config.useSingleServer()
                    .setAddress(scheme + standalone.getHost() + ":" + standalone.getPort())
                    .setDatabase(standalone.getDatabase());
        }

        // Redisson takes both as an int of milliseconds: checked here, naming the property, rather than an overflow
        Duration timeout = properties.getTimeout();
        if (timeout != null) {
            server.setTimeout((int) LockDurations.checkedBetween("spring.data.redis.timeout", timeout,
                    Duration.ofMillis(1), MAX_INT_MILLIS).toMillis());
        }
        Duration connectTimeout = properties.getConnectTimeout();
        if (connectTimeout != null) {
            server.setConnectTimeout((int) LockDurations.checkedBetween("spring.data.redis.connect-timeout",
                    connectTimeout, Duration.ofMillis(1), MAX_INT_MILLIS).toMillis());
        }
        if (properties.getClientName() != null) {
            server.setClientName(properties.getClientName());
        }
        // unset: Redisson's budget (4 more attempts, 1-2 s apart), which a burst of calls waiting for pooled
        // connections needs; see DistlockRedisProperties for the measured trade-off
        if (redis.getRetryAttempts() != null) {
            server.setRetryAttempts(redis.getRetryAttempts());
        }
        if (redis.getRetryDelay() != null) {
            server.setRetryDelay(new ConstantDelay(redis.getRetryDelay()));
        }
        // connect on first use: an application started during a Redis outage runs, and recovers by itself
        config.setLazyInitialization(!redis.isRequireAtStartup());
        return new RedissonSettings(config, server);
    }

    private static List<String> addresses(String scheme, List<DataRedisConnectionDetails.Node> nodes) {
        return nodes.stream().map(node -> scheme + node.host() + ":" + node.port()).toList();
    }

    private static void applySsl(Config config, SslBundle bundle) {
        TrustManagerFactory trust = bundle.getManagers().getTrustManagerFactory();
        KeyManagerFactory keys = bundle.getManagers().getKeyManagerFactory();
        config.setSslTrustManagerFactory(trust);
        config.setSslKeyManagerFactory(keys);
        SslOptions options = bundle.getOptions();
        if (options.getEnabledProtocols() != null) {
            config.setSslProtocols(options.getEnabledProtocols());
        }
        if (options.getCiphers() != null) {
            config.setSslCiphers(options.getCiphers());
        }
    }
}

package io.github.distlock.zookeeper.autoconfigure;

import java.time.Duration;

import io.github.distlock.autoconfigure.ConditionalOnDistlockBackend;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.autoconfigure.DistlockBackend;
import io.github.distlock.autoconfigure.DistlockProperties;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.zookeeper.ZooKeeperLockProvider;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.ConfigurationCondition;

/**
 * The ZooKeeper lock backend ({@code distlock.backend=zookeeper}): configured by the application's
 * {@link CuratorFramework} bean, or by {@code distlock.zookeeper.connect-string}, from which a client of its own is
 * built (and closed with the application). Backs off when Curator is not on the class path.
 */
@AutoConfiguration(before = DistlockAutoConfiguration.class,
        afterName = "org.springframework.cloud.zookeeper.ZookeeperAutoConfiguration")
@ConditionalOnClass(CuratorFramework.class)
@ConditionalOnProperty(prefix = "distlock", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties({DistlockProperties.class, DistlockZooKeeperProperties.class})
public final class DistlockZooKeeperAutoConfiguration {

    private static final Log logger = LogFactory.getLog(DistlockZooKeeperAutoConfiguration.class);

    @Bean
    @ConditionalOnMissingBean(LockProvider.class)
    @ConditionalOnDistlockBackend("zookeeper")
    @Conditional(ZooKeeperConfigured.class)
    DistlockBackend zookeeperLockBackend(ObjectProvider<CuratorFramework> curator, ListableBeanFactory beanFactory,
            DistlockZooKeeperProperties zooKeeper, DistlockProperties distlock) {
        String[] names = beanFactory.getBeanNamesForType(CuratorFramework.class, true, false);
        if (names.length > 0) {
            if (zooKeeper.getConnectString() != null) {
                logger.warn("distlock.zookeeper.connect-string is ignored: the ZooKeeper lock backend uses the "
                        + "CuratorFramework bean '" + String.join("', '", names) + "'");
            }
            return new DistlockBackend("zookeeper", "CuratorFramework bean '" + String.join("', '", names) + "'",
                    () -> new ZooKeeperLockProvider(curator.getObject(), zooKeeper.getBasePath()));
        }
        return new DistlockBackend("zookeeper", "distlock.zookeeper.connect-string=" + zooKeeper.getConnectString(),
                () -> ownClientProvider(zooKeeper, distlock));
    }

    /** A provider on a client of its own, which it closes when it is closed. */
    static ZooKeeperLockProvider ownClientProvider(DistlockZooKeeperProperties zooKeeper, DistlockProperties distlock) {
        // a watchdog timeout under the floor (it may be as short as 100 ms) is raised to it, as a server would
        Duration sessionTimeout = (zooKeeper.getSessionTimeout() != null) ? zooKeeper.getSessionTimeout()
                : (distlock.getWatchdogTimeout().compareTo(DistlockZooKeeperProperties.MIN_SESSION_TIMEOUT) < 0)
                        ? DistlockZooKeeperProperties.MIN_SESSION_TIMEOUT : distlock.getWatchdogTimeout();
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(zooKeeper.getConnectString())
                .sessionTimeoutMs((int) sessionTimeout.toMillis())
                .connectionTimeoutMs((int) zooKeeper.getConnectionTimeout().toMillis())
                .retryPolicy(new ExponentialBackoffRetry(100, 10, 2_000))
                .build();
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (state == ConnectionState.CONNECTED) {
                warnIfTimeoutDiffers(c, sessionTimeout);
            }
        });
        // connects in the background: an ensemble that is down fails the lock calls (LockBackendException), not the
        // startup, and they work once it is back
        client.start();
        try {
            return new ZooKeeperLockProvider(client, zooKeeper.getBasePath()) {
                @Override
                public void close() {
                    try {
                        super.close();
                    }
                    finally {
                        client.close();
                    }
                }
            };
        }
        catch (RuntimeException ex) {
            client.close();
            throw ex;
        }
    }

    private static void warnIfTimeoutDiffers(CuratorFramework client, Duration requested) {
        try {
            int granted = client.getZookeeperClient().getZooKeeper().getSessionTimeout();
            if (granted != requested.toMillis()) {
                logger.warn("ZooKeeper granted a session timeout of " + granted + " ms instead of the " + requested.toMillis()
                        + " ms asked for (the servers' minSessionTimeout/maxSessionTimeout bound it): a dead holder's "
                        + "lock lives on for " + granted + " ms");
            }
        }
        catch (Exception ex) {
            logger.debug("Could not read the granted ZooKeeper session timeout", ex);
        }
    }

    /** A CuratorFramework bean, or a connect string to build one from. */
    static final class ZooKeeperConfigured extends AnyNestedCondition {

        ZooKeeperConfigured() {
            super(ConfigurationCondition.ConfigurationPhase.REGISTER_BEAN);
        }

        @ConditionalOnBean(CuratorFramework.class)
        static final class CuratorBean {
        }

        @ConditionalOnProperty(prefix = "distlock.zookeeper", name = "connect-string")
        static final class ConnectString {
        }
    }
}

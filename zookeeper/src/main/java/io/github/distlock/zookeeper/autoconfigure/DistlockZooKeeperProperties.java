package io.github.distlock.zookeeper.autoconfigure;

import java.time.Duration;

import io.github.distlock.spi.LockDurations;

import io.github.distlock.zookeeper.ZooKeeperLockProvider;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * {@code distlock.zookeeper.*}: where the ZooKeeper lock backend connects when the application has no
 * {@code CuratorFramework} bean of its own, and where its locks live.
 */
@ConfigurationProperties(prefix = "distlock.zookeeper")
public class DistlockZooKeeperProperties {

    /** The longest timeout Curator and ZooKeeper take: an {@code int} of milliseconds. */
    private static final Duration MAX_INT_MILLIS = Duration.ofMillis(Integer.MAX_VALUE);

    /** Default base path. */
    public static final String DEFAULT_BASE_PATH = "/distlock";

    /**
     * The ensemble, as ZooKeeper takes it: {@code host1:2181,host2:2181,host3:2181}, optionally with a chroot
     * ({@code .../apps}). Setting it configures the ZooKeeper backend; ignored (with a warning) when the application
     * has a CuratorFramework bean, which is used instead.
     */
    private @Nullable String connectString;

    /**
     * The ZooKeeper session timeout, which is how long the lock of a holder that died (or was cut off) lives on:
     * locks are ephemeral nodes of the session. Not set: {@code distlock.watchdog-timeout}, so that the setting means
     * the same on every backend; at least 1 s either way. The server bounds it (by default 2 to 20 ticks: 4 s to 40 s); the granted value is
     * logged when it differs.
     */
    private @Nullable Duration sessionTimeout;

    /**
     * The shortest session timeout taken: a client given less cannot connect in time (servers grant at least two
     * ticks, 4 s by default, anyway).
     */
    static final Duration MIN_SESSION_TIMEOUT = Duration.ofSeconds(1);

    /** How long to wait for a connection to the ensemble before an operation fails. */
    private Duration connectionTimeout = Duration.ofSeconds(15);

    /** The node under which every lock key has its node. A container: ZooKeeper removes it when unused. */
    private String basePath = DEFAULT_BASE_PATH;

    public @Nullable String getConnectString() {
        return connectString;
    }

    public void setConnectString(@Nullable String connectString) {
        if (connectString != null && connectString.isBlank()) {
            throw new IllegalArgumentException("distlock.zookeeper.connect-string must not be blank: host:port[,host:port...]");
        }
        this.connectString = connectString;
    }

    public @Nullable Duration getSessionTimeout() {
        return sessionTimeout;
    }

    public void setSessionTimeout(@Nullable Duration sessionTimeout) {
        // ZooKeeper counts it in an int of milliseconds (toMillis() itself throws for the largest durations); below
        // MIN_SESSION_TIMEOUT the client gives up connecting (it allows session timeout / servers for it) before any
        // server answers, and every lock call fails with a connection loss
        this.sessionTimeout = (sessionTimeout != null) ? LockDurations.checkedBetween(
                "distlock.zookeeper.session-timeout", sessionTimeout, MIN_SESSION_TIMEOUT, MAX_INT_MILLIS) : null;
    }

    public Duration getConnectionTimeout() {
        return connectionTimeout;
    }

    public void setConnectionTimeout(Duration connectionTimeout) {
        this.connectionTimeout = LockDurations.checkedBetween("distlock.zookeeper.connection-timeout",
                connectionTimeout, Duration.ofMillis(1), MAX_INT_MILLIS);
    }

    public String getBasePath() {
        return basePath;
    }

    public void setBasePath(String basePath) {
        ZooKeeperLockProvider.checkBasePath(basePath);
        this.basePath = basePath;
    }
}

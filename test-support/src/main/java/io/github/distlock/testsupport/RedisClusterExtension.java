package io.github.distlock.testsupport;

import java.util.List;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Starts a {@link RedisCluster} (3 masters, 3 replicas) on free loopback ports before a test class and stops it after.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final RedisClusterExtension cluster = new RedisClusterExtension();
 *
 * // spring.data.redis.cluster.nodes = String.join(",", cluster.nodeAddresses())
 * }</pre>
 *
 * <p>The cluster is shared by the class's tests: a test that kills nodes leaves them dead for the next one, so such a
 * test is better off with its own {@code try (RedisCluster cluster = RedisCluster.start())}.
 */
public final class RedisClusterExtension implements BeforeAllCallback, AfterAllCallback {

    private RedisCluster cluster;

    @Override
    public void beforeAll(ExtensionContext context) {
        cluster = RedisCluster.start();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (cluster != null) {
            cluster.close();
            cluster = null;
        }
    }

    /** The running cluster; only between the class's first and last test. */
    public RedisCluster cluster() {
        if (cluster == null) {
            throw new IllegalStateException("The cluster is not running: register the extension as a static field");
        }
        return cluster;
    }

    /** Shortcut for {@code cluster().nodeAddresses()}. */
    public List<String> nodeAddresses() {
        return cluster().nodeAddresses();
    }
}

package io.github.distlock.testsupport;

import java.util.List;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Starts a {@link RedisSentinelSetup} (a master, a replica, three sentinels) on free loopback ports before a test class
 * and stops it after.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final RedisSentinelExtension redis = new RedisSentinelExtension();
 *
 * // spring.data.redis.sentinel.master = redis.masterName()
 * // spring.data.redis.sentinel.nodes  = String.join(",", redis.sentinelAddresses())
 * }</pre>
 *
 * <p>The set-up is shared by the class's tests: after a test's failover the roles stay swapped for the next one, so
 * such a test is better off with its own {@code try (RedisSentinelSetup redis = RedisSentinelSetup.start())}.
 */
public final class RedisSentinelExtension implements BeforeAllCallback, AfterAllCallback {

    private RedisSentinelSetup setup;

    @Override
    public void beforeAll(ExtensionContext context) {
        setup = RedisSentinelSetup.start();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (setup != null) {
            setup.close();
            setup = null;
        }
    }

    /** The running set-up; only between the class's first and last test. */
    public RedisSentinelSetup setup() {
        if (setup == null) {
            throw new IllegalStateException("The sentinel set-up is not running: register the extension as a static field");
        }
        return setup;
    }

    /** Shortcut for {@code setup().masterName()}. */
    public String masterName() {
        return setup().masterName();
    }

    /** Shortcut for {@code setup().sentinelAddresses()}. */
    public List<String> sentinelAddresses() {
        return setup().sentinelAddresses();
    }
}

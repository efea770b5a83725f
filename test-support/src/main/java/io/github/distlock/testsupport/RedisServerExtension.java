package io.github.distlock.testsupport;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Starts a {@link RedisServer} on a free loopback port before a test class and stops it after.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final RedisServerExtension redis = new RedisServerExtension();
 * }</pre>
 */
public final class RedisServerExtension implements BeforeAllCallback, AfterAllCallback {

    private RedisServer server;

    @Override
    public void beforeAll(ExtensionContext context) {
        server = RedisServer.start();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (server != null) {
            server.close();
            server = null;
        }
    }

    /** The running server; only between the class's first and last test. */
    public RedisServer server() {
        if (server == null) {
            throw new IllegalStateException("redis-server is not running: register the extension as a static field");
        }
        return server;
    }

    /** Shortcut for {@code server().port()}. */
    public int port() {
        return server().port();
    }

    /** Shortcut for {@code server().uri()}. */
    public String uri() {
        return server().uri();
    }
}

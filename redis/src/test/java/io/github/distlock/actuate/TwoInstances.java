package io.github.distlock.actuate;

import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.RedisServerExtension;

/**
 * Two application instances on one Redis, each with its own Redisson client, both showing keys and allowing force
 * release; holds are taken straight from their providers, so a test keeps as many as it likes without a thread each.
 */
final class TwoInstances implements AutoCloseable {

    final WebApp alpha;
    final WebApp beta;

    private TwoInstances(WebApp alpha, WebApp beta) {
        this.alpha = alpha;
        this.beta = beta;
    }

    static TwoInstances start(RedisServerExtension redis) {
        String[] common = {"spring.data.redis.host=" + redis.server().host(), "spring.data.redis.port=" + redis.port(),
                "distlock.watchdog-timeout=6s", "management.endpoint.distlock.show-values=always",
                "distlock.actuator.force-release-enabled=true"};
        WebApp alpha = WebApp.start(with(common, "spring.application.name=alpha"));
        try {
            return new TwoInstances(alpha, WebApp.start(with(common, "spring.application.name=beta")));
        }
        catch (RuntimeException ex) {
            alpha.close();
            throw ex;
        }
    }

    static RedissonLockProvider provider(WebApp app) {
        return (RedissonLockProvider) app.bean(io.github.distlock.spi.LockProvider.class);
    }

    /** The owner as Redis and the endpoint name it. */
    static String owner(WebApp app, LockOwner owner) {
        return provider(app).clientId() + ":" + owner.id();
    }

    /**
     * Tries once for {@code key}; the handle, or {@code null} when refused.
     *
     * @param leaseMillis a fixed lease, or 0 for the watchdog
     */
    static LockHandle tryLock(WebApp app, String key, LockType type, LockOwner owner, long leaseMillis, boolean fenced,
            int permits) {
        try {
            return provider(app).acquire(new LockRequest(key, 0, TimeUnit.MILLISECONDS.toNanos(leaseMillis), fenced,
                    type, owner, permits)).get(20, TimeUnit.SECONDS);
        }
        catch (Exception ex) {
            throw new IllegalStateException("acquisition of " + type + " failed", ex);
        }
    }

    static LockHandle tryLock(WebApp app, String key, LockType type, LockOwner owner) {
        return tryLock(app, key, type, owner, 0, false, 1);
    }

    private static String[] with(String[] first, String more) {
        String[] all = java.util.Arrays.copyOf(first, first.length + 1);
        all[first.length] = more;
        return all;
    }

    @Override
    public void close() {
        try {
            alpha.close();
        }
        finally {
            beta.close();
        }
    }
}

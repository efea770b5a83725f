package io.github.distlock.benchmarks;

import io.github.distlock.LockTemplate;
import io.github.distlock.testsupport.RedisServer;
import org.redisson.api.RedissonClient;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Everything one benchmark trial needs: its own {@code redis-server} on loopback, the Spring application on it (whose
 * Redisson client the raw-Redisson cases share, so both sides use the same client and settings), and the raw-protocol
 * client. {@link #close()} stops all of it.
 */
public final class BenchEnvironment implements AutoCloseable {

    private final RedisServer server;
    private final ConfigurableApplicationContext context;
    private final RawLockClient rawLocks;

    private BenchEnvironment(RedisServer server, ConfigurableApplicationContext context, RawLockClient rawLocks) {
        this.server = server;
        this.context = context;
        this.rawLocks = rawLocks;
    }

    /** Starts Redis, the application with {@code variant} applied to Redisson's config, and the raw client. */
    public static BenchEnvironment start(RedissonVariant variant) {
        RedisServer server = RedisServer.start();
        ConfigurableApplicationContext context = null;
        try {
            context = BenchApplication.start(server.port(), variant);
            RawLockClient raw = new RawLockClient(server.uri(), LockCycles.FIXED_LEASE_MS);
            return new BenchEnvironment(server, context, raw);
        }
        catch (RuntimeException ex) {
            if (context != null) {
                context.close();
            }
            server.close();
            throw ex;
        }
    }

    /** The server. */
    public RedisServer server() {
        return server;
    }

    /** The application's Redisson client. */
    public RedissonClient redisson() {
        return context.getBean(RedissonClient.class);
    }

    /** The application's lock template. */
    public LockTemplate lockTemplate() {
        return context.getBean(LockTemplate.class);
    }

    /** The proxied {@link LockedService}. */
    public LockedService lockedService() {
        return context.getBean(LockedService.class);
    }

    /** The raw-protocol client. */
    public RawLockClient rawLocks() {
        return rawLocks;
    }

    @Override
    public void close() {
        try {
            rawLocks.close();
        }
        finally {
            try {
                context.close();
            }
            finally {
                server.close();
            }
        }
    }
}

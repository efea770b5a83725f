package io.github.distlock.benchmarks;

import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;

/**
 * The smallest correct Redis lock: {@code SET key token NX PX lease} to take it, a Lua compare-and-delete to release
 * it (only the token's owner deletes). Two commands, two round trips, no renewal, no reentrancy, no wake-up of
 * waiters: the floor that shows what the protocol itself costs.
 */
public final class RawLockClient implements AutoCloseable {

    private static final String RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then "
            + "return redis.call('del', KEYS[1]) else return 0 end";

    /** How long a waiter sleeps between tries: there is no pub/sub, so waiting is polling. */
    static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private static final ThreadLocal<String> TOKEN = ThreadLocal.withInitial(() -> UUID.randomUUID().toString());

    private final RedisClient client;
    private final StatefulRedisConnection<String, String> connection;
    private final RedisCommands<String, String> commands;
    private final String releaseSha;
    private final SetArgs setArgs;

    /** Connects to {@code uri} over one Lettuce connection, which Lettuce shares safely between threads. */
    public RawLockClient(String uri, long leaseMs) {
        this.client = RedisClient.create(uri);
        this.connection = client.connect();
        this.commands = connection.sync();
        this.releaseSha = commands.scriptLoad(RELEASE);
        this.setArgs = SetArgs.Builder.nx().px(leaseMs);
    }

    /** The owner token of the calling thread (one per thread, as Redisson's {@code <client id>:<thread id>}). */
    static String threadToken() {
        return TOKEN.get();
    }

    /** Takes the lock, polling every {@link #POLL_NANOS} for up to {@code waitNanos}. */
    boolean tryLock(String key, String token, long waitNanos) {
        long deadline = System.nanoTime() + waitNanos;
        while (true) {
            if ("OK".equals(commands.set(key, token, setArgs))) {
                return true;
            }
            if (System.nanoTime() - deadline >= 0) {
                return false;
            }
            LockSupport.parkNanos(POLL_NANOS);
        }
    }

    /** Releases the lock if {@code token} still owns it. */
    boolean unlock(String key, String token) {
        Long deleted = commands.evalsha(releaseSha, ScriptOutputType.INTEGER, new String[] {key}, token);
        return deleted != null && deleted == 1L;
    }

    /** The connection, for INFO queries. */
    RedisCommands<String, String> commands() {
        return commands;
    }

    @Override
    public void close() {
        connection.close();
        client.shutdown(0, 2, TimeUnit.SECONDS);
    }
}

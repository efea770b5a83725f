package io.github.distlock.reliability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;

import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisFuture;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;

/**
 * Looks at Redis directly over its own Lettuce connection, bypassing Redisson, so what a test sees of a lock is what is
 * really stored, not what the client under test believes.
 */
final class RedisInspector implements AutoCloseable {

    private final RedisClient client;
    private final StatefulRedisConnection<String, String> connection;

    RedisInspector(int port) {
        RedisURI uri = RedisURI.builder().withHost("127.0.0.1").withPort(port).withTimeout(Duration.ofSeconds(5)).build();
        this.client = RedisClient.create(uri);
        this.connection = client.connect();
    }

    RedisCommands<String, String> sync() {
        return connection.sync();
    }

    boolean exists(String key) {
        return sync().exists(key) == 1;
    }

    /** Remaining time to live in ms; -2 when the key does not exist, -1 when it has no expiry. */
    long pttl(String key) {
        return sync().pttl(key);
    }

    /** Members of a sorted set (the permits of a key). */
    long zcard(String key) {
        return sync().zcard(key);
    }

    Map<String, String> hash(String key) {
        return sync().hgetall(key);
    }

    /** {@code PTTL} of every key, in order, pipelined: thousands of keys in one go, not one round trip each. */
    List<Long> pttls(List<String> keys) {
        return pipelined(keys, RedisAsyncCommands::pttl);
    }

    /** {@code HGETALL} of every key, in order, pipelined. */
    List<Map<String, String>> hashes(List<String> keys) {
        return pipelined(keys, RedisAsyncCommands::hgetall);
    }

    private <T> List<T> pipelined(List<String> keys, BiFunction<RedisAsyncCommands<String, String>, String, RedisFuture<T>> command) {
        RedisAsyncCommands<String, String> async = connection.async();
        List<RedisFuture<T>> replies = new ArrayList<>(keys.size());
        for (String key : keys) {
            replies.add(command.apply(async, key));
        }
        if (!LettuceFutures.awaitAll(30, TimeUnit.SECONDS, replies.toArray(RedisFuture[]::new))) {
            throw new IllegalStateException("Redis did not answer " + keys.size() + " pipelined commands within 30 s");
        }
        List<T> values = new ArrayList<>(keys.size());
        for (RedisFuture<T> reply : replies) {
            values.add(reply.toCompletableFuture().join());
        }
        return values;
    }

    long dbSize() {
        return sync().dbsize();
    }

    /** How often each command ran since the server started (or since {@code CONFIG RESETSTAT}), by lower-case name. */
    Map<String, Long> commandCalls() {
        Map<String, Long> calls = new HashMap<>();
        for (String line : sync().info("commandstats").split("\r?\n")) {
            // cmdstat_evalsha:calls=12,usec=345,usec_per_call=28.75,...
            if (line.startsWith("cmdstat_")) {
                String name = line.substring("cmdstat_".length(), line.indexOf(':'));
                String stats = line.substring(line.indexOf(':') + 1);
                for (String stat : stats.split(",")) {
                    if (stat.startsWith("calls=")) {
                        calls.put(name, Long.parseLong(stat.substring("calls=".length())));
                    }
                }
            }
        }
        return calls;
    }

    /** Calls per command between two {@link #commandCalls()} snapshots, only the commands that ran. */
    static Map<String, Long> delta(Map<String, Long> before, Map<String, Long> after) {
        Map<String, Long> delta = new HashMap<>();
        after.forEach((name, calls) -> {
            long d = calls - before.getOrDefault(name, 0L);
            if (d != 0) {
                delta.put(name, d);
            }
        });
        return delta;
    }

    /** Calls of the commands that run Lua scripts, which is how Redisson locks, renews and unlocks. */
    static long scriptCalls(Map<String, Long> calls) {
        return List.of("eval", "evalsha", "eval_ro", "evalsha_ro").stream().mapToLong(c -> calls.getOrDefault(c, 0L)).sum();
    }

    @Override
    public void close() {
        connection.close();
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
}

package io.github.distlock.topology;

import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

import io.github.distlock.testsupport.RedisCluster;
import io.github.distlock.testsupport.RedisSentinelSetup;
import io.github.distlock.testsupport.RedisServer;
import io.github.distlock.testsupport.RespClient;

/**
 * Looks at the data of a cluster or a sentinel set-up directly, over its own connections (test-support's
 * {@link RespClient}), bypassing Redisson: what a test sees of a lock is what the master serving its key really stores,
 * not what the client under test believes.
 *
 * <p>A command for a key goes to the master that serves the key now: for a cluster the owner of the key's slot, for a
 * sentinel set-up the master the sentinels name. The view remembers where that is and asks again when the answer
 * says otherwise ({@code MOVED}, {@code READONLY}) or the node is gone, so it follows a failover by itself. Anything
 * that still fails is thrown: callers in the middle of a failover treat that as "no answer", never as "no lock".
 *
 * <p>Thread-safe: every thread has its own connections ({@link RespClient} is not thread-safe); {@link #close()}
 * closes them all.
 */
abstract class RedisView implements AutoCloseable {

    private static final Duration TIMEOUT = Duration.ofSeconds(2);

    private final Queue<RespClient> opened = new ConcurrentLinkedQueue<>();
    private final ThreadLocal<Map<Integer, RespClient>> connections = ThreadLocal.withInitial(HashMap::new);

    static RedisView of(RedisCluster cluster) {
        return new ClusterView(cluster);
    }

    static RedisView of(RedisSentinelSetup redis) {
        return new SentinelView(redis);
    }

    /** The port of the master that serves {@code key}, as this view last learned it. */
    abstract int masterPortFor(String key);

    /** Forgets where keys live: the next command asks the topology again. */
    abstract void refresh();

    /**
     * Runs a command on the master serving {@code key}, following one change of topology.
     *
     * @throws RuntimeException when the master does not answer, or answers an error other than a redirection
     */
    Object call(String key, String... command) {
        RuntimeException failure = null;
        for (int attempt = 0; attempt < 2; attempt++) {
            int port = masterPortFor(key);
            try {
                return callOn(port, command);
            }
            catch (RespClient.ServerError ex) {
                if (!ex.getMessage().startsWith("MOVED") && !ex.getMessage().startsWith("READONLY")) {
                    throw ex;
                }
                failure = ex;
            }
            catch (UncheckedIOException ex) {
                failure = ex;
            }
            refresh();
        }
        throw failure;
    }

    /** Runs a command on the server on {@code port}, whatever it serves. */
    Object callOn(int port, String... command) {
        Map<Integer, RespClient> mine = connections.get();
        RespClient client = mine.get(port);
        if (client == null) {
            client = RespClient.connect(port, TIMEOUT);
            opened.add(client);
            mine.put(port, client);
        }
        try {
            return client.call(command);
        }
        catch (UncheckedIOException ex) {
            // the connection is broken (node killed, timeout): never reuse it
            mine.remove(port);
            client.close();
            throw ex;
        }
    }

    /** Every field of the hash {@code key} on the master serving it; empty when there is no such key. */
    Map<String, String> hash(String key) {
        List<?> flat = (List<?>) call(key, "HGETALL", key);
        Map<String, String> fields = new HashMap<>();
        for (int i = 0; i + 1 < flat.size(); i += 2) {
            fields.put(flat.get(i).toString(), flat.get(i + 1).toString());
        }
        return fields;
    }

    /** Remaining time to live in ms on the master serving the key; -2 when it does not exist, -1 without expiry. */
    long pttl(String key) {
        return (Long) call(key, "PTTL", key);
    }

    /** The string value of {@code key}, or {@code null}. */
    String get(String key) {
        Object value = call(key, "GET", key);
        return value == null ? null : value.toString();
    }

    /** Keys matching {@code pattern} on the server on {@code port} (a test's few keys: {@code KEYS} is fine there). */
    List<String> keysOn(int port, String pattern) {
        List<String> keys = new ArrayList<>();
        for (Object key : (List<?>) callOn(port, "KEYS", pattern)) {
            keys.add(key.toString());
        }
        return keys;
    }

    @Override
    public void close() {
        opened.forEach(RespClient::close);
        opened.clear();
    }

    /** Keys by slot, slots by master, as {@code CLUSTER SLOTS} of a running node says. */
    private static final class ClusterView extends RedisView {

        private final RedisCluster cluster;
        private volatile int[] ownerBySlot;

        ClusterView(RedisCluster cluster) {
            this.cluster = cluster;
            refresh();
        }

        @Override
        int masterPortFor(String key) {
            return ownerBySlot[RedisCluster.slotOf(key)];
        }

        @Override
        synchronized void refresh() {
            RuntimeException failure = null;
            for (RedisCluster.Node node : cluster.nodes()) {
                if (!node.isRunning()) {
                    continue;
                }
                try {
                    int[] owners = new int[RedisCluster.SLOTS];
                    for (Object entry : (List<?>) RespClient.callOnce(node.port(), "CLUSTER", "SLOTS")) {
                        List<?> range = (List<?>) entry;
                        int port = ((Long) ((List<?>) range.get(2)).get(1)).intValue();
                        for (long slot = (Long) range.get(0); slot <= (Long) range.get(1); slot++) {
                            owners[(int) slot] = port;
                        }
                    }
                    ownerBySlot = owners;
                    return;
                }
                catch (RuntimeException ex) {
                    failure = ex;
                }
            }
            throw new IllegalStateException("No node of " + cluster + " answered CLUSTER SLOTS", failure);
        }
    }

    /** The master the first answering sentinel names. */
    private static final class SentinelView extends RedisView {

        private final RedisSentinelSetup redis;
        private volatile int masterPort;

        SentinelView(RedisSentinelSetup redis) {
            this.redis = redis;
            refresh();
        }

        @Override
        int masterPortFor(String key) {
            return masterPort;
        }

        @Override
        synchronized void refresh() {
            RuntimeException failure = null;
            for (RedisServer sentinel : redis.sentinels()) {
                try {
                    List<?> address = (List<?>) RespClient.callOnce(sentinel.port(), "SENTINEL",
                            "GET-MASTER-ADDR-BY-NAME", redis.masterName());
                    masterPort = Integer.parseInt(address.get(1).toString());
                    return;
                }
                catch (RuntimeException ex) {
                    failure = ex;
                }
            }
            throw new IllegalStateException("No sentinel of " + redis + " named the master", failure);
        }
    }
}

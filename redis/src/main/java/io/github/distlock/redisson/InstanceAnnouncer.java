package io.github.distlock.redisson;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import io.github.distlock.spi.LockInstance;
import org.redisson.api.RScript;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/**
 * Announces this instance in a string {@code distlock:instance:{<client id>}} (one {@code SET ... PX}, no script: lock
 * scripts are what operators count) that expires after the watchdog timeout unless refreshed (every third of it) — the
 * client id being the first part of every owner field this client writes; and reads the instances others announced.
 */
final class InstanceAnnouncer {

    /** Prefix of the hash naming the instance behind a client id; the id is a hash tag of its own. */
    static final String INSTANCE_KEY_PREFIX = "distlock:instance:";

    /** Reads the instance entry on the master, as the lock scripts do (a replica may lag behind). */
    private static final String READ_INSTANCE = "return redis.call('get', KEYS[1])";

    private final RedissonClient redisson;
    private final String clientId;
    private final long watchdogMillis;
    /** Shared with the provider's give-backs: announcements never wait for Redis on it. */
    private final ScheduledExecutorService executor;
    private volatile LockInstance announced;
    private java.util.concurrent.ScheduledFuture<?> announcing;
    /** Written and read on the give-back thread only. */
    private CompletableFuture<?> pendingAnnouncement;

    InstanceAnnouncer(RedissonClient redisson, String clientId, long watchdogMillis, ScheduledExecutorService executor) {
        this.redisson = redisson;
        this.clientId = clientId;
        this.watchdogMillis = watchdogMillis;
        this.executor = executor;
    }

    /**
     * Stores {@code self} under this client's id now and every third of the watchdog timeout, with the watchdog
     * timeout as its time to live: it outlives this process by no longer than the process's own watchdog locks. A
     * write that fails (Redis unreachable) is made again at the next refresh.
     */
    synchronized void announce(LockInstance self) {
        announced = java.util.Objects.requireNonNull(self, "self");
        if (announcing == null) {
            long period = Math.max(1, watchdogMillis / 3);
            try {
                announcing = executor.scheduleWithFixedDelay(this::writeAnnouncement, 0, period, TimeUnit.MILLISECONDS);
            }
            catch (java.util.concurrent.RejectedExecutionException closed) {
                // closed: nothing to announce any more
            }
        }
    }

    private void writeAnnouncement() {
        LockInstance self = announced;
        CompletableFuture<?> previous = pendingAnnouncement;
        if (previous != null && !previous.isDone()) {
            // Redis unreachable: the last write is still being retried; don't pile more commands onto the lock calls'
            return;
        }
        try {
            // not waited for: the executor also runs give-backs, which must not queue behind an unreachable Redis
            pendingAnnouncement = redisson.<String>getBucket(instanceKey(clientId), StringCodec.INSTANCE)
                    .setAsync(encodeInstance(self), Duration.ofMillis(watchdogMillis)).toCompletableFuture();
        }
        catch (RuntimeException ex) {
            // shutting down: nothing more to announce
        }
    }

    /** Deletes this instance's entry, best effort, if it was announced. */
    void close() {
        if (announced != null) {
            try {
                redisson.getKeys().deleteAsync(instanceKey(clientId)).toCompletableFuture().get(1, TimeUnit.SECONDS);
            }
            catch (Exception ex) {
                // Redis unreachable or the client shutting down: the entry expires by itself
            }
        }
    }

    /** The instance that announced itself under {@code clientId}, or {@code null}. */
    LockInstance instance(String clientId) {
        String key = instanceKey(clientId);
        String entry = Futures.join(redisson.getScript(StringCodec.INSTANCE).<String>evalAsync(key, RScript.Mode.READ_WRITE,
                READ_INSTANCE, RScript.ReturnType.VALUE, List.<Object>of(key)).toCompletableFuture());
        return (entry != null) ? decodeInstance(entry) : null;
    }

    /** {@code application=..&host=..&pid=..}, each part URL-encoded: any name survives, and it stays readable. */
    static String encodeInstance(LockInstance instance) {
        return "application=" + encode(instance.application()) + "&host=" + encode(instance.host()) + "&pid="
                + instance.pid();
    }

    /** The instance of {@link #encodeInstance}, or {@code null} for anything else. */
    static LockInstance decodeInstance(String entry) {
        java.util.Map<String, String> parts = new java.util.HashMap<>();
        for (String part : entry.split("&")) {
            int equals = part.indexOf('=');
            if (equals > 0) {
                parts.put(part.substring(0, equals),
                        java.net.URLDecoder.decode(part.substring(equals + 1), java.nio.charset.StandardCharsets.UTF_8));
            }
        }
        if (parts.get("application") == null || parts.get("host") == null) {
            return null;
        }
        try {
            return new LockInstance(parts.get("application"), parts.get("host"),
                    Long.parseLong(parts.getOrDefault("pid", "-1")));
        }
        catch (NumberFormatException ex) {
            return new LockInstance(parts.get("application"), parts.get("host"), -1);
        }
    }

    private static String encode(String value) {
        return java.net.URLEncoder.encode(value, java.nio.charset.StandardCharsets.UTF_8);
    }

    /** The key of the hash naming the instance behind {@code clientId}. */
    static String instanceKey(String clientId) {
        return INSTANCE_KEY_PREFIX + "{" + clientId + "}";
    }
}

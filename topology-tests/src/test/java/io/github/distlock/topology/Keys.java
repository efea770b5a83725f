package io.github.distlock.topology;

/** Names of the Redis keys a lock uses, computed here independently of the library, so tests can check its choice. */
final class Keys {

    /** distlock's default {@code distlock.key-prefix}, which the tests keep. */
    static final String PREFIX = "lock:";

    private Keys() {
    }

    /**
     * The fencing counter of a lock: {@code redisson_lock_token:{<key>}}, or, when the key already contains a
     * {@code {}, {@code redisson_lock_token:<key>} (Redisson's {@code RedissonObject.prefixName}, which the provider
     * uses). Either way Redis hashes the counter to the lock's slot only when the key has no {@code {} at all or a
     * non-empty hash tag; see {@code ClusterLockingTest} for the keys where it does not.
     */
    static String fencingCounter(String fullKey) {
        return fullKey.contains("{") ? "redisson_lock_token:" + fullKey : "redisson_lock_token:{" + fullKey + "}";
    }
}

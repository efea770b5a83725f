package io.github.distlock.redisson;

import org.redisson.RedissonObject;

/** The lock keys this provider accepts, and the Redis keys it derives from them. */
final class LockKeys {

    private LockKeys() {
    }

    /**
     * The Redis key of the READ/WRITE lock of {@code key}: {@code distlock_rw:{<key>}} (in {@code key}'s slot). Not
     * {@code <key>:rw}, which was the REENTRANT lock of a key named {@code <key>:rw} too: its release deleted the
     * read/write hash under its holders, and a second writer got in.
     */
    static String readWriteKey(String key) {
        return RedissonObject.prefixName("distlock_rw", key);
    }

    /**
     * Refuses lock keys this provider cannot keep apart from others': see {@link #checkHashTag} and
     * {@link #checkNamespace}.
     */
    static void checkKey(String key) {
        checkHashTag(key);
        checkNamespace(key);
    }

    /**
     * Redisson derives companion keys (unlock latch, fencing counter) from the lock's name: with a '{' that opens no
     * non-empty hash tag, or a '}' that closes none, they land in other Redis Cluster slots than the lock, and every
     * release (every FAIR script) fails (CROSSSLOT).
     * Refused on every topology, so that a key that works on one server does not break on a cluster.
     */
    static void checkHashTag(String key) {
        int open = key.indexOf('{');
        if (open < 0) {
            if (key.indexOf('}') >= 0) {
                // the companions are named <prefix>:{<key>}: this '}' would end their hash tag early, and they would
                // hash by part of the key while the lock hashes by all of it (every FAIR script a CROSSSLOT)
                throw new IllegalArgumentException("Lock key '" + key + "' has a '}' that closes no hash tag: on Redis "
                        + "Cluster its companion keys would land in other slots and it could never be taken. Use a "
                        + "complete hash tag such as {tenant-7}, or no braces");
            }
            return;
        }
        int close = key.indexOf('}', open + 1);
        if (close < 0 || close == open + 1) {
            throw new IllegalArgumentException("Lock key '" + key + "' has a '{' that opens no hash tag (a non-empty "
                    + "{...}): on Redis Cluster its companion keys would land in other slots and it could never be "
                    + "released. Use a complete hash tag such as {tenant-7}, or no braces");
        }
    }

    /**
     * The companions of a lock — its read/write hash, FAIR queue, permits, fencing counter — are named
     * {@code distlock_<what>:{<key>}} and {@code redisson_<what>:{<key>}}. A lock key in those namespaces could be
     * another lock's companion (a WRONGTYPE for that lock, or worse), and a key that is one whole hash tag
     * ({@code {x}}) has the companions of the key inside it; both are refused. Keys normally start with
     * {@code distlock.key-prefix} ({@code lock:}), which keeps them out; only an empty prefix lets them in.
     */
    static void checkNamespace(String key) {
        // Redisson names a companion prefix:{key} for a key without braces and prefix:key for one with them, so 'x'
        // and '{x}' would share every companion (a force release of '{x}' freed the write lock of 'x')
        if (key.length() > 2 && key.charAt(0) == '{' && key.charAt(key.length() - 1) == '}'
                && key.indexOf('{', 1) < 0) {
            throw new IllegalArgumentException("Lock key '" + key + "' is one whole hash tag: its Redis companions "
                    + "(read/write hash, FAIR queue, fencing counter) would be those of the key '"
                    + key.substring(1, key.length() - 1) + "'. Put text outside the braces (order:" + key
                    + ") or use a key prefix (distlock.key-prefix, default 'lock:')");
        }
        if (key.startsWith("distlock_") || key.startsWith("redisson_")) {
            throw new IllegalArgumentException("Lock key '" + key + "' is in a namespace distlock keeps for the Redis "
                    + "keys that go with a lock (distlock_*, redisson_*): use another name, or a key prefix "
                    + "(distlock.key-prefix, default 'lock:')");
        }
    }
}

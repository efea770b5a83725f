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
        return companion("distlock_rw", key);
    }

    /**
     * The companion {@code <prefix>:{<key>}} of a lock key ({@code <prefix>:<key>} when the key has a hash tag of its
     * own, as Redisson names them). Every companion is named here, and a key that is one whole hash tag is refused
     * here too ({@link #checkNotOneWholeHashTag}): a path that forgot {@link #checkKey} still cannot reach the
     * companions of another key.
     */
    static String companion(String prefix, String key) {
        checkNotOneWholeHashTag(key);
        return RedissonObject.prefixName(prefix, key);
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
     * Refuses a key that is one whole hash tag ({@code {x}}): Redisson names a companion {@code <prefix>:{x}} for the
     * key {@code x} and {@code <prefix>:x} for a key with braces, so {@code x} and {@code {x}} would share every
     * companion — closing one would close the other, the holders and the force release of one would list and evict the
     * other's, and the eviction notice would name the wrong key. Every path refuses it with this one message: acquiring
     * (every type, permits), closing and reopening, holders and force release.
     */
    static void checkNotOneWholeHashTag(String key) {
        if (key.length() > 2 && key.charAt(0) == '{' && key.charAt(key.length() - 1) == '}'
                && key.indexOf('{', 1) < 0) {
            throw new IllegalArgumentException("Lock key '" + key + "' is one whole hash tag: its Redis companions "
                    + "(read/write hash, FAIR queue, closed mark, permits, fencing counter) would be those of the key '"
                    + key.substring(1, key.length() - 1) + "'. Put text outside the braces (order:" + key
                    + ") or use a key prefix (distlock.key-prefix, default 'lock:')");
        }
    }

    /**
     * The companions of a lock — its read/write hash, FAIR queue, closed mark, permits, fencing counter — are named
     * {@code distlock_<what>:{<key>}} and {@code redisson_<what>:{<key>}}. A lock key in those namespaces could be
     * another lock's companion (a WRONGTYPE for that lock, or worse), and a key that is one whole hash tag
     * ({@code {x}}) has the companions of the key inside it; both are refused. Keys normally start with
     * {@code distlock.key-prefix} ({@code lock:}), which keeps them out; only an empty prefix lets them in.
     */
    static void checkNamespace(String key) {
        checkNotOneWholeHashTag(key);
        if (key.startsWith("distlock_") || key.startsWith("redisson_")) {
            throw new IllegalArgumentException("Lock key '" + key + "' is in a namespace distlock keeps for the Redis "
                    + "keys that go with a lock (distlock_*, redisson_*): use another name, or a key prefix "
                    + "(distlock.key-prefix, default 'lock:')");
        }
    }

    /**
     * The Redis Cluster slot of {@code key}, as Redis computes it: CRC16 of its hash tag (the text between the first
     * '{' and the first '}' after it, when not empty), else of the whole key, modulo 16384.
     */
    static int slot(String key) {
        byte[] bytes = key.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        int from = 0;
        int to = bytes.length;
        int open = indexOf(bytes, (byte) '{', 0);
        if (open >= 0) {
            int close = indexOf(bytes, (byte) '}', open + 1);
            if (close > open + 1) {
                from = open + 1;
                to = close;
            }
        }
        return org.redisson.connection.CRC16.crc16(java.util.Arrays.copyOfRange(bytes, from, to)) % 16384;
    }

    private static int indexOf(byte[] bytes, byte wanted, int from) {
        for (int i = from; i < bytes.length; i++) {
            if (bytes[i] == wanted) {
                return i;
            }
        }
        return -1;
    }
}

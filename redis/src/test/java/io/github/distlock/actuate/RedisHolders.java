package io.github.distlock.actuate;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.github.distlock.testsupport.RespClient;

/**
 * Who holds a key, read straight from Redis with the test RESP client: the probe the endpoint's answers are checked
 * against, independent of the library's own scripts and bookkeeping. It knows the Redis layout of each lock type:
 * <ul>
 * <li>{@code K}: the hash of {@code REENTRANT} and {@code FAIR}, {@code {<owner>: count}} with a time to live;</li>
 * <li>{@code distlock_rw:{K}}: Redisson's read/write hash, {@code mode} plus one field per reader and
 * {@code <owner>:write} for the writer; a reader's lease lives in its own keys
 * {@code distlock_rw:{K}:<owner>:rwlock_timeout:<n>} (one per hold), so a reader whose keys all expired no longer
 * holds, even while the hash lives on for the others;</li>
 * <li>{@code distlock_permits:{K}}: a sorted set of {@code <N>|<owner>} scored by expiry in Redis's clock.</li>
 * </ul>
 */
final class RedisHolders {

    private RedisHolders() {
    }

    /** A live holder: its owner ({@code <client id>:<owner id>}) and how ({@code exclusive}, {@code read}, ...). */
    record Holder(String owner, String mode) {
    }

    static String readWriteKey(String key) {
        return key.contains("{") ? "distlock_rw:" + key : "distlock_rw:{" + key + "}";
    }

    static String permitsKey(String key) {
        return key.contains("{") ? "distlock_permits:" + key : "distlock_permits:{" + key + "}";
    }

    /** Every live holder of {@code key}, sorted by owner then mode. */
    static List<Holder> of(RespClient redis, String key) {
        List<Holder> holders = new ArrayList<>();
        if (redis.call("TYPE", key).equals("hash") && (Long) redis.call("PTTL", key) > 0) {
            for (String field : hash(redis, key).keySet()) {
                holders.add(new Holder(field, "exclusive"));
            }
        }
        String readWrite = readWriteKey(key);
        if (redis.call("TYPE", readWrite).equals("hash") && (Long) redis.call("PTTL", readWrite) > 0) {
            for (Map.Entry<String, String> field : hash(redis, readWrite).entrySet()) {
                if (field.getKey().equals("mode")) {
                    continue;
                }
                if (field.getKey().endsWith(":write")) {
                    holders.add(new Holder(field.getKey().substring(0, field.getKey().length() - 6), "write"));
                }
                else if (readerAlive(redis, readWrite, field.getKey(), Long.parseLong(field.getValue()))) {
                    holders.add(new Holder(field.getKey(), "read"));
                }
            }
        }
        String permits = permitsKey(key);
        if (redis.call("TYPE", permits).equals("zset")) {
            List<?> time = (List<?>) redis.call("TIME");
            long now = Long.parseLong(time.get(0).toString()) * 1000 + Long.parseLong(time.get(1).toString()) / 1000;
            List<?> members = (List<?>) redis.call("ZRANGE", permits, "0", "-1", "WITHSCORES");
            for (int i = 0; i + 1 < members.size(); i += 2) {
                if (Double.parseDouble(members.get(i + 1).toString()) > now) {
                    String member = members.get(i).toString();
                    holders.add(new Holder(member.substring(member.indexOf('|') + 1), "permit"));
                }
            }
        }
        holders.sort(java.util.Comparator.comparing(Holder::owner).thenComparing(Holder::mode));
        return holders;
    }

    /** The keys a reader's holds live in; at least one of them still alive means it holds. */
    static boolean readerAlive(RespClient redis, String readWrite, String field, long count) {
        for (long i = count; i >= 1; i--) {
            if ((Long) redis.call("PTTL", readWrite + ":" + field + ":rwlock_timeout:" + i) > 0) {
                return true;
            }
        }
        return false;
    }

    static Map<String, String> hash(RespClient redis, String key) {
        List<?> flat = (List<?>) redis.call("HGETALL", key);
        Map<String, String> fields = new TreeMap<>();
        for (int i = 0; i + 1 < flat.size(); i += 2) {
            fields.put(flat.get(i).toString(), flat.get(i + 1).toString());
        }
        return fields;
    }
}

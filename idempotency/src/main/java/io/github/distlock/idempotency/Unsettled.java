package io.github.distlock.idempotency;

import java.util.HashMap;
import java.util.Map;

/**
 * The lock keys of idempotent calls on this thread whose outcome is not settled: running, or returned with their
 * mark waiting for the commit of a transaction (the current one or one suspended by a nested transaction).
 */
final class Unsettled {

    private static final ThreadLocal<Map<String, Integer>> KEYS = ThreadLocal.withInitial(HashMap::new);

    private Unsettled() {
    }

    static boolean contains(String lockKey) {
        return KEYS.get().containsKey(lockKey);
    }

    static void add(String lockKey) {
        KEYS.get().merge(lockKey, 1, Integer::sum);
    }

    static void remove(String lockKey) {
        Map<String, Integer> keys = KEYS.get();
        keys.computeIfPresent(lockKey, (key, count) -> (count > 1) ? count - 1 : null);
        if (keys.isEmpty()) {
            KEYS.remove();
        }
    }
}

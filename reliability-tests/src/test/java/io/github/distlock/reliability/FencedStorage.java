package io.github.distlock.reliability;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A stand-in for storage that takes part in fencing, as a database row with a {@code fence} column updated by
 * {@code UPDATE ... SET value = ?, fence = ? WHERE id = ? AND fence <= ?} would: it remembers the highest token that
 * wrote each item and refuses a write that carries a lower one.
 */
final class FencedStorage {

    /** One write as the storage saw it. */
    record Write(String item, long token, String value, boolean accepted) {
    }

    private final boolean checkTokens;
    private final Map<String, Long> highestToken = new HashMap<>();
    private final Map<String, String> values = new HashMap<>();
    private final List<Write> log = new ArrayList<>();

    /** @param checkTokens {@code false} makes a storage that ignores tokens, as most storage does */
    FencedStorage(boolean checkTokens) {
        this.checkTokens = checkTokens;
    }

    /** Writes {@code value} unless a higher token already wrote the item; returns whether it was written. */
    synchronized boolean write(String item, long token, String value) {
        boolean accepted = !checkTokens || token >= highestToken.getOrDefault(item, Long.MIN_VALUE);
        if (accepted) {
            highestToken.merge(item, token, Math::max);
            values.put(item, value);
        }
        log.add(new Write(item, token, value, accepted));
        return accepted;
    }

    synchronized String read(String item) {
        return values.get(item);
    }

    synchronized List<Write> log() {
        return List.copyOf(log);
    }
}

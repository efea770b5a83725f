package io.github.distlock.actuate;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockHolderInfo;
import io.github.distlock.spi.LockInspector;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.jspecify.annotations.Nullable;

/**
 * An exclusive lock per key in this process, naming its owners {@code node-1:<owner id>} as a backend does, for tests
 * of what the endpoint does with an inspector's answers (owner names, refusals, audit), not of a backend's locking:
 * the backends' own force release is tested in their modules against real servers. A key held by someone else is not
 * granted (no waiting).
 */
final class OneInstanceInspectingProvider implements LockProvider, LockInspector {

    static final String INSTANCE_ID = "node-1";

    private final Map<String, Hold> held = new HashMap<>();

    private record Hold(String owner, List<Consumer<String>> lost) {
    }

    @Override
    public synchronized CompletableFuture<LockHandle> acquire(LockRequest request) {
        String owner = ownerName(request.owner().id());
        if (held.containsKey(request.key())) {
            return CompletableFuture.completedFuture(null);
        }
        Hold hold = new Hold(owner, new ArrayList<>());
        held.put(request.key(), hold);
        return CompletableFuture.completedFuture(new LockHandle() {
            @Override
            public long fencingToken() {
                return -1;
            }

            @Override
            public CompletableFuture<Boolean> releaseAsync() {
                synchronized (OneInstanceInspectingProvider.this) {
                    return CompletableFuture.completedFuture(held.remove(request.key(), hold));
                }
            }

            @Override
            public void whenLost(Consumer<String> callback) {
                synchronized (OneInstanceInspectingProvider.this) {
                    hold.lost().add(callback);
                }
            }
        });
    }

    @Override
    public synchronized List<LockHolderInfo> holders(String key) {
        Hold hold = held.get(key);
        return (hold != null) ? List.of(info(key, hold)) : List.of();
    }

    @Override
    public List<LockHolderInfo> forceRelease(String key) {
        return forceRelease(key, null).holders();
    }

    @Override
    public synchronized ForceRelease forceRelease(String key, @Nullable String expectedOwner) {
        Hold hold = held.get(key);
        if (hold == null || (expectedOwner != null && !hold.owner().equals(expectedOwner))) {
            return new ForceRelease(false, holders(key));
        }
        held.remove(key);
        hold.lost().forEach(callback -> callback.accept("force-released"));
        return new ForceRelease(true, List.of(info(key, hold)));
    }

    @Override
    public String ownerName(long ownerId) {
        return INSTANCE_ID + ":" + ownerId;
    }

    @Override
    public boolean ping(Duration timeout) {
        return true;
    }

    private static LockHolderInfo info(String key, Hold hold) {
        return new LockHolderInfo(key, hold.owner(), INSTANCE_ID, null, "exclusive", null);
    }
}

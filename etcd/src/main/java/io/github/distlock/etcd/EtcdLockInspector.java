package io.github.distlock.etcd;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseTimeToLiveResponse;
import io.github.distlock.spi.LockHolderInfo;
import io.github.distlock.spi.LockInspector;
import io.github.distlock.spi.LockInstance;
import org.jspecify.annotations.Nullable;

/**
 * Who holds a key, read from the entries under its prefix by the recipe's own rules, and the force release: see
 * {@link EtcdLockProvider}'s {@code holders}, {@code forceRelease} and {@code ping}.
 *
 * <p>Who holds, by the rules {@link EtcdAcquisition} acquires by, the entries ordered by create revision: a reader
 * ({@code r/}) holds when no writer entry ({@code w/}) was created before it; any other entry (ours in {@code w/}, or
 * an etcd mutex's on the same prefix) holds when it is the first entry of all. So the set of holders can change only
 * when a holder's entry, or the first writer entry, is deleted (or rewritten): entries created later are behind them.
 * A force release therefore compares exactly those entries' mod revisions in the transaction that deletes the holders'
 * entries, and the holders it returns are exactly the ones it evicted.
 */
final class EtcdLockInspector {

    /** Reads again after a conflicting change (a holder released, re-put its entry, a waiter took the lock). */
    private static final int FORCE_RELEASE_ATTEMPTS = 5;
    /** A force release asks this much of etcd at most: its default limit of operations per transaction is 128. */
    private static final int MAX_HOLDERS = 100;

    private final EtcdLockProvider provider;
    private final EtcdLockRepository repository;
    private volatile @Nullable CompletableFuture<?> pendingPing;

    EtcdLockInspector(EtcdLockProvider provider, EtcdLockRepository repository) {
        this.provider = provider;
        this.repository = repository;
    }

    List<LockHolderInfo> holders(String key) {
        return read(key).holders(null);
    }

    LockInspector.ForceRelease forceRelease(String key, @Nullable String expectedOwner) {
        for (int attempt = 1; ; attempt++) {
            Snapshot snapshot = read(key);
            List<LockHolderInfo> evicted = snapshot.holders(expectedOwner);
            if (evicted.isEmpty()) {
                return new LockInspector.ForceRelease(false, snapshot.holders(null));
            }
            if (snapshot.holding.size() > MAX_HOLDERS) {
                throw new IllegalStateException("forceRelease: lock '" + key + "' has " + snapshot.holding.size()
                        + " holders, more than the " + MAX_HOLDERS + " one etcd transaction can evict");
            }
            List<KeyValue> unchanged = new ArrayList<>(snapshot.holding);
            if (snapshot.firstWriter != null && !unchanged.contains(snapshot.firstWriter)) {
                unchanged.add(snapshot.firstWriter);
            }
            List<KeyValue> deleted = snapshot.holding.stream()
                    .filter(entry -> expectedOwner == null || expectedOwner.equals(snapshot.owner(entry)))
                    .toList();
            TxnResponse answer = EtcdLockProvider.join(repository.deleteIfUnchanged(unchanged, deleted));
            if (answer.isSucceeded()) {
                EtcdLockProvider.log().warn("distlock: lock '" + key + "' force-released in etcd; evicted "
                        + evicted.stream().map(LockHolderInfo::owner).toList());
                return new LockInspector.ForceRelease(true, evicted);
            }
            if (attempt == FORCE_RELEASE_ATTEMPTS) {
                throw new IllegalStateException("forceRelease: the holders of lock '" + key + "' changed at each of "
                        + attempt + " attempts; nothing was deleted");
            }
        }
    }

    /**
     * One round trip (a count of a single key), bounded by {@code timeout}; a ping still unanswered is waited for
     * again rather than sent once more, so that an unreachable etcd does not pile up requests.
     */
    boolean ping(Duration timeout) {
        CompletableFuture<?> ping;
        synchronized (this) {
            ping = pendingPing;
            if (ping == null || ping.isDone()) {
                try {
                    ping = repository.countKey(EtcdLockProvider.bytes(provider.instanceKey()));
                }
                catch (RuntimeException ex) {
                    return false; // the client is closed
                }
                pendingPing = ping;
            }
        }
        try {
            ping.get(Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS);
            return true;
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return false;
        }
        catch (ExecutionException | TimeoutException | RuntimeException ex) {
            return false;
        }
    }

    /** The entries and the instances at one revision, then the time left of each distinct lease among the holders'. */
    private Snapshot read(String key) {
        String prefix = provider.lockPrefix(key);
        TxnResponse answer = EtcdLockProvider.join(repository.entriesAndInstances(EtcdLockProvider.bytes(prefix),
                EtcdLockProvider.bytes(provider.instancesPrefix())));
        List<KeyValue> entries = new ArrayList<>(answer.getGetResponses().get(0).getKvs());
        entries.sort(Comparator.comparingLong(KeyValue::getCreateRevision));
        Map<String, LockInstance> instances = new HashMap<>();
        for (KeyValue announced : answer.getGetResponses().get(1).getKvs()) {
            LockInstance instance = EtcdInstances.decode(EtcdLockProvider.text(announced.getValue()));
            if (instance != null) {
                instances.put(EtcdLockProvider.text(announced.getKey()).substring(provider.instancesPrefix().length()),
                        instance);
            }
        }
        List<KeyValue> holding = holding(entries, prefix);
        KeyValue firstWriter = entries.stream().filter(entry -> isWriter(entry, prefix)).findFirst().orElse(null);
        Set<Long> leases = new LinkedHashSet<>();
        holding.stream().map(KeyValue::getLease).filter(lease -> lease != 0).forEach(leases::add);
        Map<Long, CompletableFuture<LeaseTimeToLiveResponse>> ttls = new HashMap<>();
        leases.forEach(lease -> ttls.put(lease, repository.timeToLive(lease)));
        Map<Long, Duration> remaining = new HashMap<>();
        ttls.forEach((lease, ttl) -> {
            long seconds = EtcdLockProvider.join(ttl).getTTL();
            // -1: expired since the read; etcd deletes its keys now, so it holds nothing for long
            remaining.put(lease, Duration.ofSeconds(Math.max(0, seconds)));
        });
        return new Snapshot(key, prefix, holding, firstWriter, instances, remaining);
    }

    /** The entries that hold the lock by the recipe's rules (see the class comment), oldest first. */
    static List<KeyValue> holding(List<KeyValue> entriesByCreation, String prefix) {
        List<KeyValue> holding = new ArrayList<>();
        boolean writerBefore = false;
        for (int i = 0; i < entriesByCreation.size(); i++) {
            KeyValue entry = entriesByCreation.get(i);
            if (isReader(entry, prefix)) {
                if (!writerBefore) {
                    holding.add(entry);
                }
            }
            else {
                if (i == 0) {
                    holding.add(entry);
                }
                writerBefore |= isWriter(entry, prefix);
            }
        }
        return holding;
    }

    private static boolean isReader(KeyValue entry, String prefix) {
        return EtcdLockProvider.text(entry.getKey()).startsWith(prefix + "r/");
    }

    private static boolean isWriter(KeyValue entry, String prefix) {
        return EtcdLockProvider.text(entry.getKey()).startsWith(prefix + "w/");
    }

    /** The entries of a key at one revision, with what the holders' names and leases say. */
    private record Snapshot(String key, String prefix, List<KeyValue> holding, @Nullable KeyValue firstWriter,
            Map<String, LockInstance> instances, Map<Long, Duration> remaining) {

        /** The holders, all of them or {@code owner}'s. */
        List<LockHolderInfo> holders(@Nullable String owner) {
            List<LockHolderInfo> holders = new ArrayList<>();
            for (KeyValue entry : holding) {
                String entryOwner = owner(entry);
                if (owner == null || owner.equals(entryOwner)) {
                    String instanceId = instanceId(entry);
                    holders.add(new LockHolderInfo(key, entryOwner, instanceId,
                            (instanceId != null) ? instances.get(instanceId) : null, mode(entry),
                            (entry.getLease() != 0) ? remaining.get(entry.getLease()) : null));
                }
            }
            return holders;
        }

        /**
         * {@code <client id>:<owner id>} for an entry of ours ({@code w/<client>-<owner hex>}): the owner as
         * {@link EtcdLockProvider#ownerName} names it; else the entry's name under the prefix.
         */
        String owner(KeyValue entry) {
            String name = name(entry);
            EntryName ours = EntryName.parse(name);
            return (ours != null) ? ours.clientId() + ":" + Long.toUnsignedString(ours.ownerId()) : name;
        }

        private @Nullable String instanceId(KeyValue entry) {
            EntryName ours = EntryName.parse(name(entry));
            return (ours != null) ? ours.clientId() : null;
        }

        /** {@code read} for a reader; the mode its value names for a writer of ours; else {@code exclusive}. */
        private String mode(KeyValue entry) {
            if (isReader(entry, prefix)) {
                return "read";
            }
            String value = EtcdLockProvider.text(entry.getValue());
            return (isWriter(entry, prefix) && value.equals("write")) ? "write" : "exclusive";
        }

        private String name(KeyValue entry) {
            return EtcdLockProvider.text(entry.getKey()).substring(prefix.length());
        }
    }

    /**
     * The name of an entry of ours under a lock's prefix: {@code w/} or {@code r/}, the client id, {@code -}, the
     * owner id in hex.
     */
    record EntryName(String clientId, long ownerId) {

        static @Nullable EntryName parse(String name) {
            if (!(name.startsWith("w/") || name.startsWith("r/"))) {
                return null;
            }
            int dash = name.lastIndexOf('-');
            if (dash <= 2 || dash == name.length() - 1 || name.length() - dash - 1 > 16) {
                return null;
            }
            try {
                return new EntryName(name.substring(2, dash), Long.parseUnsignedLong(name.substring(dash + 1), 16));
            }
            catch (NumberFormatException notOurs) {
                return null;
            }
        }
    }
}

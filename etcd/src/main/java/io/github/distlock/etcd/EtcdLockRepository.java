package io.github.distlock.etcd;

import java.util.List;
import java.util.concurrent.CompletableFuture;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.Lease;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Txn;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.DeleteResponse;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.PutResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.lease.LeaseRevokeResponse;
import io.etcd.jetcd.lease.LeaseTimeToLiveResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.LeaseOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;

/**
 * The reads, transactions, leases and watches the locks are made of, each as etcd is asked it. Every write to an entry
 * that may already be a holder's is conditional on the entry's create revision, so that it can never touch a later
 * holder's entry. Every write that creates an entry or grants the lock also requires the key's closed marker to be
 * absent ({@code version == 0}), in the same transaction: see {@link EtcdLockProvider#closeKey}.
 */
final class EtcdLockRepository {

    private final KV kv;
    private final Lease leases;
    private final Watch watches;

    EtcdLockRepository(Client client) {
        this.kv = client.getKVClient();
        this.leases = client.getLeaseClient();
        this.watches = client.getWatchClient();
    }

    /**
     * How many entries there are under {@code prefix}, without reading them, unless the key is closed: then the
     * {@code closed} marker (the else branch).
     */
    CompletableFuture<TxnResponse> countUnlessClosed(ByteSequence prefix, ByteSequence closed) {
        return kv.txn().If(open(closed))
                .Then(Op.get(prefix, GetOption.builder().isPrefix(true).withCountOnly(true).build()))
                .Else(Op.get(closed, GetOption.DEFAULT))
                .commit();
    }

    /**
     * Creates {@code entry} on {@code leaseId} unless it exists or the key is closed: a retried request never creates
     * the entry twice, and either branch tells its revision (the put's header, or the existing entry's create
     * revision); the else branch also reads the {@code closed} marker.
     */
    CompletableFuture<TxnResponse> createIfAbsent(ByteSequence entry, ByteSequence value, long leaseId,
            ByteSequence closed) {
        return kv.txn().If(new Cmp(entry, Cmp.Op.EQUAL, CmpTarget.createRevision(0)), open(closed))
                .Then(Op.put(entry, value, PutOption.builder().withLeaseId(leaseId).build()))
                .Else(Op.get(entry, GetOption.DEFAULT), Op.get(closed, GetOption.DEFAULT))
                .commit();
    }

    /**
     * If {@code entry} is still the one created at {@code revision} and the key is not closed, the key of the entry
     * under {@code blockers} created last before it; all in one transaction. Else the {@code closed} marker.
     */
    CompletableFuture<TxnResponse> lastBefore(ByteSequence entry, long revision, ByteSequence blockers,
            ByteSequence closed) {
        GetOption lastBefore = GetOption.builder().isPrefix(true).withMaxCreateRevision(revision - 1)
                .withSortField(GetOption.SortTarget.CREATE).withSortOrder(GetOption.SortOrder.DESCEND)
                .withLimit(1).withKeysOnly(true).build();
        return kv.txn().If(new Cmp(entry, Cmp.Op.EQUAL, CmpTarget.createRevision(revision)), open(closed))
                .Then(Op.get(blockers, lastBefore))
                .Else(Op.get(closed, GetOption.DEFAULT))
                .commit();
    }

    /** Puts {@code entry} on the lease {@code leaseId}, if it is still the one created at {@code revision}. */
    CompletableFuture<TxnResponse> putIfOurs(ByteSequence entry, ByteSequence value, long revision, long leaseId) {
        return kv.txn().If(new Cmp(entry, Cmp.Op.EQUAL, CmpTarget.createRevision(revision)))
                .Then(Op.put(entry, value, PutOption.builder().withLeaseId(leaseId).build()))
                .commit();
    }

    /** Deletes {@code entry}, if it is still the one created at {@code revision}. */
    CompletableFuture<TxnResponse> deleteIfOurs(ByteSequence entry, long revision) {
        return kv.txn().If(new Cmp(entry, Cmp.Op.EQUAL, CmpTarget.createRevision(revision)))
                .Then(Op.delete(entry, DeleteOption.DEFAULT)).commit();
    }

    /** Deletes {@code entry} unconditionally: for an entry whose name only one acquisition ever uses. */
    CompletableFuture<DeleteResponse> delete(ByteSequence entry) {
        return kv.delete(entry);
    }

    /** Whether {@code key} exists, without reading it: a round trip that costs etcd nearly nothing. */
    CompletableFuture<GetResponse> countKey(ByteSequence key) {
        return kv.get(key, GetOption.builder().withCountOnly(true).build());
    }

    CompletableFuture<GetResponse> get(ByteSequence entry) {
        return kv.get(entry, GetOption.DEFAULT);
    }

    /**
     * Every entry under {@code prefix} and every instance announced under {@code instances}, read at one revision.
     */
    CompletableFuture<TxnResponse> entriesAndInstances(ByteSequence prefix, ByteSequence instances) {
        return kv.txn().Then(Op.get(prefix, GetOption.builder().isPrefix(true).build()),
                Op.get(instances, GetOption.builder().isPrefix(true).build())).commit();
    }

    /**
     * Deletes {@code deleted} if every entry of {@code unchanged} still has the mod revision it was read with (an
     * entry deleted since has none): the entries read are still what decides who holds the lock.
     */
    CompletableFuture<TxnResponse> deleteIfUnchanged(List<KeyValue> unchanged, List<KeyValue> deleted) {
        Txn txn = kv.txn().If(unchanged.stream()
                .map(entry -> new Cmp(entry.getKey(), Cmp.Op.EQUAL, CmpTarget.modRevision(entry.getModRevision())))
                .toArray(Cmp[]::new));
        return txn.Then(deleted.stream().map(entry -> Op.delete(entry.getKey(), DeleteOption.DEFAULT))
                .toArray(Op[]::new)).commit();
    }

    /** Puts the {@code closed} marker with {@code reason} and reads the entries under {@code prefix}, at one revision. */
    CompletableFuture<TxnResponse> close(ByteSequence closed, ByteSequence reason, ByteSequence prefix) {
        return kv.txn().Then(Op.put(closed, reason, PutOption.DEFAULT),
                Op.get(prefix, GetOption.builder().isPrefix(true).withKeysOnly(true).build())).commit();
    }

    /** Puts {@code key} on the lease {@code leaseId}. */
    CompletableFuture<PutResponse> put(ByteSequence key, ByteSequence value, long leaseId) {
        return kv.put(key, value, PutOption.builder().withLeaseId(leaseId).build());
    }

    /** Watches {@code key} for puts, from {@code fromRevision} on (earlier ones are replayed). */
    Watch.Watcher watchPuts(ByteSequence key, long fromRevision, Watch.Listener listener) {
        WatchOption puts = WatchOption.builder().withRevision(fromRevision).withNoDelete(true).build();
        return watches.watch(key, puts, listener);
    }

    /** Watches {@code key} for its deletion, from {@code fromRevision} on (earlier ones are replayed). */
    Watch.Watcher watchDeletion(ByteSequence key, long fromRevision, Watch.Listener listener) {
        WatchOption deletions = WatchOption.builder().withRevision(fromRevision).withNoPut(true).build();
        return watches.watch(key, deletions, listener);
    }

    CompletableFuture<LeaseGrantResponse> grant(long ttlSeconds) {
        return leases.grant(ttlSeconds);
    }

    CompletableFuture<LeaseKeepAliveResponse> keepAliveOnce(long leaseId) {
        return leases.keepAliveOnce(leaseId);
    }

    CompletableFuture<LeaseRevokeResponse> revoke(long leaseId) {
        return leases.revoke(leaseId);
    }

    CompletableFuture<LeaseTimeToLiveResponse> timeToLive(long leaseId) {
        return leases.timeToLive(leaseId, LeaseOption.DEFAULT);
    }

    /** The key's closed marker is absent. */
    private static Cmp open(ByteSequence closed) {
        return new Cmp(closed, Cmp.Op.EQUAL, CmpTarget.version(0));
    }
}

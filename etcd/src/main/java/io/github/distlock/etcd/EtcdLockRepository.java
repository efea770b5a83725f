package io.github.distlock.etcd;

import java.util.concurrent.CompletableFuture;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.Lease;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.DeleteResponse;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.lease.LeaseRevokeResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;

/**
 * The reads, transactions, leases and watches the locks are made of, each as etcd is asked it. Every write to an entry
 * that may already be a holder's is conditional on the entry's create revision, so that it can never touch a later
 * holder's entry.
 */
final class EtcdLockRepository {

    private static final ByteSequence NO_VALUE = ByteSequence.EMPTY;

    private final KV kv;
    private final Lease leases;
    private final Watch watches;

    EtcdLockRepository(Client client) {
        this.kv = client.getKVClient();
        this.leases = client.getLeaseClient();
        this.watches = client.getWatchClient();
    }

    /** How many entries there are under {@code prefix}, without reading them. */
    CompletableFuture<GetResponse> count(ByteSequence prefix) {
        return kv.get(prefix, GetOption.builder().isPrefix(true).withCountOnly(true).build());
    }

    /**
     * Creates {@code entry} on {@code leaseId} unless it exists: a retried request never creates the entry twice, and
     * either branch tells its revision (the put's header, or the existing entry's create revision).
     */
    CompletableFuture<TxnResponse> createIfAbsent(ByteSequence entry, long leaseId) {
        return kv.txn().If(new Cmp(entry, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
                .Then(Op.put(entry, NO_VALUE, PutOption.builder().withLeaseId(leaseId).build()))
                .Else(Op.get(entry, GetOption.DEFAULT))
                .commit();
    }

    /**
     * If {@code entry} is still the one created at {@code revision}, the key of the entry under {@code blockers}
     * created last before it; both in one transaction.
     */
    CompletableFuture<TxnResponse> lastBefore(ByteSequence entry, long revision, ByteSequence blockers) {
        GetOption lastBefore = GetOption.builder().isPrefix(true).withMaxCreateRevision(revision - 1)
                .withSortField(GetOption.SortTarget.CREATE).withSortOrder(GetOption.SortOrder.DESCEND)
                .withLimit(1).withKeysOnly(true).build();
        return kv.txn().If(new Cmp(entry, Cmp.Op.EQUAL, CmpTarget.createRevision(revision)))
                .Then(Op.get(blockers, lastBefore)).commit();
    }

    /** Puts {@code entry} on the lease {@code leaseId}, if it is still the one created at {@code revision}. */
    CompletableFuture<TxnResponse> putIfOurs(ByteSequence entry, long revision, long leaseId) {
        return kv.txn().If(new Cmp(entry, Cmp.Op.EQUAL, CmpTarget.createRevision(revision)))
                .Then(Op.put(entry, NO_VALUE, PutOption.builder().withLeaseId(leaseId).build()))
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

    CompletableFuture<GetResponse> get(ByteSequence entry) {
        return kv.get(entry, GetOption.DEFAULT);
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
}

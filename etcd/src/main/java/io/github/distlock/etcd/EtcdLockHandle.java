package io.github.distlock.etcd;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.watch.WatchEvent;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockRequest;

/**
 * One lock held in etcd: its entry, identified by its key and create revision, so that every write this handle makes
 * is a transaction conditional on that revision and can never touch a later holder's entry (even one of the same name,
 * which cannot happen: names are unique per acquisition).
 *
 * <p>State: HELD until the first of release (RELEASED), the end of a fixed lease (EXPIRED) or a loss (LOST); each
 * leaves HELD once, by compare-and-set, so a loss is reported at most once and never after the release began.
 */
final class EtcdLockHandle implements LockHandle {

    private static final int HELD = 0;
    private static final int RELEASED = 1;
    private static final int EXPIRED = 2;
    private static final int LOST = 3;

    private final EtcdLockProvider provider;
    private final LockRequest request;
    private final ByteSequence entry;
    private final long createRevision;
    private final long leaseId;
    /** The shared session lease of a watchdog lock; null for a fixed lease, which has a lease of its own. */
    final EtcdSession session;
    private final AtomicInteger state = new AtomicInteger(HELD);
    private final AtomicBoolean releaseCalled = new AtomicBoolean();
    private final AtomicBoolean lossReported = new AtomicBoolean();
    private final AtomicReference<Watch.Watcher> watcher = new AtomicReference<>();
    private volatile long fencingToken;
    private volatile ScheduledFuture<?> leaseEnd;
    private volatile String lostReason;
    private volatile Consumer<String> lostCallback;

    EtcdLockHandle(EtcdLockProvider provider, LockRequest request, ByteSequence entry, long createRevision, long leaseId,
            EtcdSession session, long fencingToken) {
        this.provider = provider;
        this.request = request;
        this.entry = entry;
        this.createRevision = createRevision;
        this.leaseId = leaseId;
        this.session = session;
        this.fencingToken = fencingToken;
    }

    /** Watches the entry for its deletion from {@code fromRevision} on; starts a fixed lease's timer. */
    void start(long fromRevision) {
        if (!request.watchdog()) {
            leaseEnd = provider.schedule(this::leaseRanOut, request.leaseNanos());
        }
        Watch.Watcher next = provider.repository().watchDeletion(entry, fromRevision + 1, Watch.listener(response -> {
            if (response.getEvents().stream().anyMatch(event -> event.getEventType() == WatchEvent.EventType.DELETE)) {
                lost("its etcd key " + key() + " was deleted behind its holder's back (its lease expired, or someone "
                        + "deleted it)");
            }
        }, error -> verify()));
        watcher.set(next);
        if (state.get() != HELD) {
            stopWatching();
        }
    }

    /** The watch broke and may have missed a deletion: ask. */
    private void verify() {
        if (state.get() != HELD) {
            return;
        }
        provider.repository().get(entry).whenComplete((answer, failure) -> {
            if (failure == null && !isOurs(answer.getKvs())) {
                lost("its etcd key " + key() + " is gone (its lease expired, or someone deleted it)");
            }
        });
    }

    private boolean isOurs(java.util.List<KeyValue> kvs) {
        return !kvs.isEmpty() && kvs.get(0).getCreateRevision() == createRevision;
    }

    void stopWatching() {
        EtcdLockProvider.closeQuietly(watcher.getAndSet(null));
    }

    private String key() {
        return entry.toString(java.nio.charset.StandardCharsets.UTF_8);
    }

    private void leaseRanOut() {
        if (state.compareAndSet(HELD, EXPIRED)) {
            provider.forget(this);
            stopWatching();
            deleteIfOurs().whenComplete((deleted, failure) -> revokeLease());
        }
    }

    private CompletableFuture<Boolean> deleteIfOurs() {
        return provider.repository().deleteIfOurs(entry, createRevision).thenApply(TxnResponse::isSucceeded);
    }

    private void revokeLease() {
        if (session == null) {
            provider.repository().revoke(leaseId).exceptionally(failure -> null);
        }
    }

    @Override
    public long fencingToken() {
        return fencingToken;
    }

    /** A write to our own entry, conditional on it being ours: its revision is higher than every one before it. */
    @Override
    public long newFencingToken() {
        if (request.type() == LockType.READ) {
            throw new UnsupportedOperationException("READ locks take no fencing token: readers do not write");
        }
        if (state.get() != HELD) {
            return -1;
        }
        TxnResponse answer = join(provider.repository().putIfOurs(entry,
                EtcdLockProvider.bytes(EtcdLockProvider.mode(request.type())), createRevision, leaseId));
        if (!answer.isSucceeded()) {
            lost("its etcd key " + key() + " is gone (its lease expired, or someone deleted it)");
            return -1;
        }
        if (state.get() != HELD) {
            return -1; // the lease ended or a loss was found meanwhile: the token may be the next holder's already
        }
        fencingToken = answer.getHeader().getRevision();
        return fencingToken;
    }

    @Override
    public CompletableFuture<Boolean> releaseAsync() {
        if (!releaseCalled.compareAndSet(false, true)) {
            return CompletableFuture.completedFuture(false);
        }
        boolean wasHeld = state.compareAndSet(HELD, RELEASED);
        provider.forget(this);
        stopWatching();
        ScheduledFuture<?> task = leaseEnd;
        if (task != null) {
            task.cancel(false);
        }
        // Deleted whatever the state (a holder told lost may still have its entry), but only if it is still ours
        CompletableFuture<Boolean> released = deleteIfOurs().thenApply(deleted -> wasHeld && deleted);
        released.whenComplete((ignored, failure) -> {
            if (failure != null) {
                retryDelete(1);
            }
            else {
                revokeLease();
            }
        });
        return released.handle((result, failure) -> {
            if (failure != null) {
                Throwable cause = EtcdLockProvider.unwrap(failure);
                throw (cause instanceof RuntimeException runtime) ? runtime : new CompletionException(cause);
            }
            return result;
        });
    }

    /**
     * A release that failed (etcd unreachable) keeps trying in the background: a watchdog lock's session lease is
     * renewed as long as this process lives, so the entry would otherwise stay. Stops when it succeeds, when the
     * provider closes (its session lease is revoked), or once the lease would have expired anyway.
     */
    private void retryDelete(int attempt) {
        long maxAttempts = (session != null) ? Long.MAX_VALUE : Math.max(1, LockDurations.ceilSeconds(request.leaseNanos()));
        if (provider.isClosed() || attempt > maxAttempts || (session != null && session.lost.get())) {
            return;
        }
        try {
            provider.schedule(() -> deleteIfOurs().whenComplete((deleted, failure) -> {
                if (failure != null) {
                    retryDelete(attempt + 1);
                }
                else {
                    revokeLease();
                }
            }), TimeUnit.SECONDS.toNanos(1));
        }
        catch (IllegalStateException closed) {
            // the provider closed: its session lease is revoked, which deletes the entry
        }
    }

    @Override
    public boolean stillHeld() {
        if (state.get() != HELD) {
            return false;
        }
        if (!isOurs(join(provider.repository().get(entry)).getKvs())) {
            lost("its etcd key " + key() + " is gone (its lease expired, or someone deleted it)");
            return false;
        }
        return state.get() == HELD;
    }

    @Override
    public boolean lostWhileHeld() {
        return state.get() == LOST;
    }

    @Override
    public void whenLost(Consumer<String> callback) {
        lostCallback = callback;
        if (lostReason != null) {
            fireLost();
        }
    }

    /** A loss found while held: reported once, and only if the lock had not been released or run out. */
    void lost(String reason) {
        if (state.compareAndSet(HELD, LOST)) {
            provider.forget(this);
            stopWatching();
            lostReason = "etcd lock '" + request.key() + "': " + reason;
            if (lostCallback != null) {
                fireLost();
            }
        }
    }

    private void fireLost() {
        Consumer<String> callback = lostCallback;
        String reason = lostReason;
        if (callback != null && reason != null && lossReported.compareAndSet(false, true)) {
            provider.runCallback(() -> callback.accept(reason));
        }
    }

    private static <T> T join(CompletableFuture<T> future) {
        try {
            return future.join();
        }
        catch (CompletionException ex) {
            Throwable cause = EtcdLockProvider.unwrap(ex);
            throw (cause instanceof RuntimeException runtime) ? runtime : ex;
        }
    }

    /** The entry, e.g. {@code distlock/orders%2F42/w/<client>-<owner>}. */
    String entryKey() {
        return key();
    }

    @Override
    public String toString() {
        return "EtcdLockHandle[" + request.key() + " " + request.type() + " " + key() + "@" + createRevision + "]";
    }
}

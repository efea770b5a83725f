package io.github.distlock.etcd;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.watch.WatchEvent;
import io.github.distlock.LockKeyClosedException;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockRequest;

/**
 * One acquisition, from its request to a handle, "not acquired" or a failure.
 *
 * <p>Invariant: it ends exactly once, by the compare-and-set out of WAITING; whatever ends it second backs off. An
 * entry created for an acquisition that was abandoned is deleted by whichever of "entry created" and "abandoned"
 * comes second: the creation publishes {@link #revision} and then reads the state; the abandoning sets the state
 * and then reads {@link #revision}.
 *
 * <p>Closed keys: the create transaction and every look at the queue require the key's closed marker to be absent;
 * while it waits, the acquisition also watches the marker from the revision of its latest look on, and fails with
 * {@link LockKeyClosedException} when it is put (see {@link EtcdLockProvider#closeKey}).
 */
final class EtcdAcquisition {

    private static final int WAITING = 0;
    private static final int ACQUIRED = 1;
    private static final int ABANDONED = 2;

    private final EtcdLockProvider provider;
    private final EtcdLockRepository repository;
    final LockRequest request;
    final boolean exclusive;
    final String prefix;
    final ByteSequence entry;
    /** What the entry holds: its mode. */
    private final ByteSequence value;
    /** The key's closed marker, which every create and every look requires absent. */
    private final ByteSequence closedMarker;
    final CompletableFuture<LockHandle> future = new CompletableFuture<>();
    private final AtomicInteger state = new AtomicInteger(WAITING);
    /** The entry's create revision; 0 until it is created. */
    private volatile long revision;
    private volatile EtcdSession session;
    private volatile boolean deadlinePassed;
    private volatile boolean sawItTaken;
    private volatile ScheduledFuture<?> deadline;
    private final AtomicReference<Watch.Watcher> watcher = new AtomicReference<>();
    /** The watch on the closed marker, from the first look that found the lock taken on. */
    private final AtomicReference<Watch.Watcher> closeWatcher = new AtomicReference<>();

    EtcdAcquisition(EtcdLockProvider provider, LockRequest request) {
        this.provider = provider;
        this.repository = provider.repository();
        this.request = request;
        this.exclusive = request.type().exclusive();
        this.prefix = provider.lockPrefix(request.key());
        this.entry = EtcdLockProvider.bytes(prefix + (exclusive ? "w/" : "r/") + provider.clientId() + "-"
                + Long.toHexString(request.owner().id()));
        this.value = EtcdLockProvider.bytes(EtcdLockProvider.mode(request.type()));
        this.closedMarker = EtcdLockProvider.bytes(provider.closedMarker(request.key()));
    }

    /** Where the entries this one waits for are: every entry for an exclusive lock, writers' for a reader. */
    private ByteSequence blockers() {
        return EtcdLockProvider.bytes(exclusive ? prefix : prefix + "w/");
    }

    void start() {
        provider.startedWaiting(this);
        future.whenComplete((handle, failure) -> {
            if (future.isCancelled()) {
                abandon();
            }
        });
        if (request.waitNanos() == 0) {
            // one try: when the lock is visibly taken, answer without creating an entry and deleting it again
            repository.countUnlessClosed(blockers(), closedMarker)
                    .whenComplete((answer, failure) -> guarded(() -> {
                        if (failure != null) {
                            fail(EtcdLockProvider.unwrap(failure));
                        }
                        else if (!answer.isSucceeded()) {
                            failClosed(answer.getGetResponses().get(0).getKvs());
                        }
                        else if (answer.getGetResponses().get(0).getCount() > 0) {
                            sawItTaken = true;
                            giveUp();
                        }
                        else {
                            create(false);
                        }
                    }));
        }
        else {
            deadline = provider.schedule(this::deadlineReached, request.waitNanos());
            create(false);
        }
    }

    private void create(boolean retried) {
        if (state.get() != WAITING) {
            return;
        }
        provider.sessions().current().whenComplete((s, failure) -> guarded(() -> {
            if (failure != null) {
                fail(EtcdLockProvider.unwrap(failure));
                return;
            }
            session = s;
            s.waiters.add(this);
            if (s.lost.get()) {
                fail(new IllegalStateException("The etcd lease of lock '" + request.key() + "' was lost"));
                return;
            }
            if (state.get() != WAITING) {
                return;
            }
            // create-if-absent: a retried request never creates the entry twice, and either branch tells its revision
            repository.createIfAbsent(entry, value, s.leaseId, closedMarker).whenComplete((answer, txnFailure) -> guarded(() -> {
                if (txnFailure != null) {
                    if (!EtcdLockProvider.isNotFound(txnFailure)) {
                        // the answer may have been lost after etcd created the entry: delete it (its name
                        // is this acquisition's alone), or it stays on the renewed session lease for good
                        deleteEntry();
                    }
                    if (EtcdLockProvider.isNotFound(txnFailure) && !retried) {
                        // the session lease expired on the server before we noticed: a new one, once
                        s.waiters.remove(this);
                        s.lose("its etcd lease " + Long.toHexString(s.leaseId) + " expired (etcd no longer knows it)");
                        create(true);
                    }
                    else {
                        fail(EtcdLockProvider.unwrap(txnFailure));
                    }
                    return;
                }
                if (answer.isSucceeded()) {
                    created(answer.getHeader().getRevision());
                    return;
                }
                List<KeyValue> existing = answer.getGetResponses().get(0).getKvs();
                List<KeyValue> marker = answer.getGetResponses().get(1).getKvs();
                if (marker.isEmpty()) {
                    created(existing.get(0).getCreateRevision());
                    return;
                }
                if (!existing.isEmpty()) {
                    revision = existing.get(0).getCreateRevision(); // an earlier try of ours created it: deleted
                }
                failClosed(marker);
            }));
        }));
    }

    private void created(long createRevision) {
        revision = createRevision;
        if (state.get() != WAITING) {
            deleteEntry();
            return;
        }
        check();
    }

    /**
     * Looks for the entry created last before ours among those we wait for: none means ours holds the lock, if
     * ours is still there. Both in one transaction: an entry of ours that vanished (its lease expired or was
     * revoked before this provider noticed, or it was deleted) is no place in the queue, and a waiter that took
     * the lock without one would hold it beside the next newcomer, who finds no entry ahead of its own.
     */
    private void check() {
        if (state.get() != WAITING) {
            return;
        }
        repository.lastBefore(entry, revision, blockers(), closedMarker).whenComplete((answer, failure) -> guarded(() -> {
            if (failure != null) {
                fail(EtcdLockProvider.unwrap(failure));
            }
            else if (!answer.isSucceeded() && !answer.getGetResponses().get(0).getKvs().isEmpty()) {
                failClosed(answer.getGetResponses().get(0).getKvs());
            }
            else if (!answer.isSucceeded()) {
                fail(new IllegalStateException("The etcd entry " + EtcdLockProvider.text(entry) + " of lock '"
                        + request.key() + "' vanished while waiting (its lease expired or was revoked, or it was deleted)"));
            }
            else {
                checked(answer.getGetResponses().get(0), answer.getHeader().getRevision());
            }
        }));
    }

    private void checked(GetResponse answer, long readRevision) {
        if (answer.getKvs().isEmpty()) {
            acquired(readRevision);
            return;
        }
        sawItTaken = true;
        if (deadlinePassed || request.waitNanos() == 0) {
            giveUp();
            return;
        }
        watchClosedMarker(readRevision + 1);
        KeyValue blocker = answer.getKvs().get(0);
        // from the revision just read: a deletion after the read is replayed, so none is missed
        AtomicBoolean woken = new AtomicBoolean();
        Watch.Watcher next = repository.watchDeletion(blocker.getKey(), readRevision + 1, Watch.listener(response -> {
            boolean deleted = response.getEvents().stream()
                    .anyMatch(event -> event.getEventType() == WatchEvent.EventType.DELETE);
            if (deleted && woken.compareAndSet(false, true)) {
                guarded(this::check);
            }
        }, error -> {
            // a watch that broke (compaction, lost stream) may have missed the deletion: look again
            if (woken.compareAndSet(false, true)) {
                guarded(this::check);
            }
        }));
        EtcdLockProvider.closeQuietly(watcher.getAndSet(next));
        if (state.get() != WAITING) {
            EtcdLockProvider.closeQuietly(watcher.getAndSet(null));
        }
    }

    /**
     * Watches the closed marker from {@code fromRevision} on (the look at that revision found it absent), unless it
     * is watched already. A watch that broke is dropped and the queue looked at again, which looks at the marker too
     * and watches it anew.
     */
    private void watchClosedMarker(long fromRevision) {
        if (closeWatcher.get() != null) {
            return;
        }
        AtomicBoolean ended = new AtomicBoolean();
        Watch.Watcher next = repository.watchPuts(closedMarker, fromRevision, Watch.listener(response -> {
            response.getEvents().stream().filter(event -> event.getEventType() == WatchEvent.EventType.PUT)
                    .findFirst().ifPresent(put -> guarded(() -> failClosed(List.of(put.getKeyValue()))));
        }, error -> {
            if (ended.compareAndSet(false, true)) {
                EtcdLockProvider.closeQuietly(closeWatcher.getAndSet(null));
                guarded(this::check);
            }
        }));
        if (!closeWatcher.compareAndSet(null, next)) {
            EtcdLockProvider.closeQuietly(next);
        }
        if (state.get() != WAITING) {
            EtcdLockProvider.closeQuietly(closeWatcher.getAndSet(null));
        }
    }

    /** The key is closed ({@code marker} holds the reason): fails, deleting the entry if there is one. */
    private void failClosed(List<KeyValue> marker) {
        fail(new LockKeyClosedException(request.key(), EtcdLockProvider.text(marker.get(0).getValue())));
    }

    private void deadlineReached() {
        deadlinePassed = true;
        // until etcd has shown the lock taken, its first answer decides: never "not acquired" for a lock nobody
        // was seen holding (a slow or unreachable etcd is a failure, reported as one)
        if (sawItTaken) {
            giveUp();
        }
    }

    private void acquired(long readRevision) {
        if (!state.compareAndSet(WAITING, ACQUIRED)) {
            return;
        }
        endWaiting();
        EtcdSession s = session;
        long token = request.fenced() ? readRevision : -1;
        if (request.watchdog()) {
            handOut(new EtcdLockHandle(provider, request, entry, revision, s.leaseId, s, token),
                    readRevision);
            return;
        }
        // a fixed lease: a lease of its own from now on, so that it runs from the acquisition, not the request
        repository.grant(EtcdLockProvider.ttlSeconds(Duration.ofNanos(request.leaseNanos())))
                .thenCompose(grant -> repository.putIfOurs(entry, value, revision, grant.getID()).thenApply(answer -> {
                    if (!answer.isSucceeded()) {
                        repository.revoke(grant.getID()).exceptionally(failure -> null);
                        throw new IllegalStateException("The etcd entry of lock '" + request.key()
                                + "' was gone before its lease could be set (its session lease expired, or it was deleted)");
                    }
                    return new EtcdLockHandle(provider, request, entry, revision, grant.getID(), null, token);
                }).thenAccept(handle -> handOut(handle, readRevision))).whenComplete((ignored, failure) -> {
                    if (failure != null) {
                        deleteEntry();
                        provider.runCallback(() -> future.completeExceptionally(EtcdLockProvider.unwrap(failure)));
                    }
                });
    }

    private void handOut(EtcdLockHandle handle, long fromRevision) {
        provider.hold(handle);
        if (handle.session != null) {
            handle.session.holders.add(handle);
            if (handle.session.lost.get()) {
                handle.lost("its etcd lease was lost when the lock was granted");
            }
        }
        try {
            handle.start(fromRevision);
        }
        catch (RuntimeException closedMeanwhile) {
            handle.releaseAsync();
            provider.runCallback(() -> future.completeExceptionally(closedMeanwhile));
            return;
        }
        provider.runCallback(() -> {
            if (!future.complete(handle)) {
                handle.releaseAsync(); // the caller cancelled meanwhile
            }
        });
    }

    /** Ends as "not acquired" once the entry is deleted, so that the caller's next try is not behind it. */
    private void giveUp() {
        if (!state.compareAndSet(WAITING, ABANDONED)) {
            return;
        }
        endWaiting();
        if (revision == 0) {
            provider.runCallback(() -> future.complete(null));
            return;
        }
        deleteEntry().whenComplete((ignored, failure) -> provider.runCallback(() -> future.complete(null)));
    }

    void fail(Throwable failure) {
        if (!state.compareAndSet(WAITING, ABANDONED)) {
            return;
        }
        endWaiting();
        if (revision != 0) {
            deleteEntry();
        }
        provider.runCallback(() -> future.completeExceptionally(failure));
    }

    private void abandon() {
        if (state.compareAndSet(WAITING, ABANDONED)) {
            endWaiting();
            if (revision != 0) {
                deleteEntry();
            }
        }
    }

    /**
     * Deletes this acquisition's entry; completes after the first try. A try that fails (etcd unreachable for a
     * moment) is repeated every second: the entry is on the session lease, which this provider renews as long as
     * it lives, so an entry left behind would hold the lock, once first in the queue, for everyone. The retries
     * stop once the session is lost (its lease expires, and the entry with it) or the provider is closed (it
     * revokes the lease). The name is this acquisition's alone: deleting it never touches another's entry.
     */
    private CompletableFuture<Void> deleteEntry() {
        CompletableFuture<Void> firstTry = new CompletableFuture<>();
        deleteEntry(firstTry);
        return firstTry;
    }

    private void deleteEntry(CompletableFuture<Void> firstTry) {
        repository.delete(entry).whenComplete((ignored, failure) -> {
            firstTry.complete(null);
            EtcdSession s = session;
            if (failure == null || provider.isClosed() || (s != null && s.lost.get())) {
                return;
            }
            try {
                provider.schedule(() -> deleteEntry(firstTry), TimeUnit.SECONDS.toNanos(1));
            }
            catch (IllegalStateException closedMeanwhile) {
                // closed: the session lease is revoked, and the entry with it
            }
        });
    }

    private void endWaiting() {
        provider.stoppedWaiting(this);
        EtcdSession s = session;
        if (s != null) {
            s.waiters.remove(this);
        }
        ScheduledFuture<?> task = deadline;
        if (task != null) {
            task.cancel(false);
        }
        EtcdLockProvider.closeQuietly(watcher.getAndSet(null));
        EtcdLockProvider.closeQuietly(closeWatcher.getAndSet(null));
    }

    /** A failure in our own callback code must end the acquisition, not vanish on a jetcd thread. */
    private void guarded(Runnable step) {
        try {
            step.run();
        }
        catch (Throwable failure) {
            fail(failure);
        }
    }
}

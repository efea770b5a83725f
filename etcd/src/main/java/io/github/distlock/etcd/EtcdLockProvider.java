package io.github.distlock.etcd;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Lease;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Locks in etcd: a key per acquisition under the lock's prefix, attached to a lease; the key with the lowest create
 * revision holds the lock; each waiter watches the key it waits for (the one created just before its own, or for a
 * reader the nearest writer's) and looks again when that one is deleted. This is etcd's own
 * {@code concurrency.Mutex} recipe, extended with readers, run asynchronously on jetcd.
 *
 * <h2>Layout</h2>
 * The lock of {@code key} is the prefix {@code <namespace><key>/} ({@code /} and {@code %} in the key
 * percent-encoded, so that no key's prefix contains another's); exclusive entries ({@code REENTRANT}, {@code FAIR},
 * {@code WRITE}) are {@code <prefix>w/<client>-<owner>}, readers' {@code <prefix>r/<client>-<owner>}. All types of
 * one key exclude each other unless both read; every type is first come, first served. An etcd mutex on the same
 * prefix ({@code etcdctl lock <namespace><key>}) excludes and is excluded by our exclusive locks.
 *
 * <h2>Leases</h2>
 * <ul>
 * <li>Watchdog locks ({@code leaseNanos == 0}) share this provider's session lease, whose TTL is the watchdog timeout
 * (in whole seconds, rounded up: etcd counts leases in seconds; the server may also raise a TTL below its minimum,
 * about 1.5 times its election timeout). This provider renews it every third of its TTL. A holder that dies stops
 * renewing; its locks go when the lease expires.</li>
 * <li>A fixed lease gets a lease of its own with that TTL, rounded up to whole seconds, and no renewal; this provider
 * also deletes the key when the lease runs out, to the millisecond, so a live holder's lock ends on time and the
 * etcd lease only bounds a dead holder's (which then lives up to a second longer than asked: never shorter).</li>
 * <li>Loss: when the session lease has not been renewed for two thirds of its TTL (etcd unreachable: it may expire
 * before it can be renewed) or etcd says it is gone, its holders are told, once, through {@link LockHandle#whenLost};
 * so are holders whose key is deleted behind their back (each holder watches its key).</li>
 * </ul>
 *
 * <h2>Fencing</h2>
 * Tokens are etcd revisions, which grow with every write to the cluster: a fenced acquisition takes the revision of
 * the read that found no key ahead of its own (at or after the deletion of every earlier holder's key, so above every
 * token they were issued, including tokens issued to a holder after a waiter's key was created);
 * {@link LockHandle#newFencingToken()} the revision of a write to its own key.
 *
 * <p>The client belongs to the caller: {@link #close()} revokes the session lease (freeing the locks still held) and
 * stops this provider's timers, not the client.
 */
public class EtcdLockProvider implements LockProvider, AutoCloseable {

    private static final Log logger = LogFactory.getLog(EtcdLockProvider.class);

    private static final ByteSequence NO_VALUE = ByteSequence.EMPTY;

    private final Client client;
    private final KV kv;
    private final Lease leases;
    private final Watch watches;
    private final String namespace;
    private final long sessionTtlSeconds;
    /** Makes entry names unique across processes: every acquisition's owner id is unique only in its process. */
    private final String clientId = UUID.randomUUID().toString();
    /** Wait deadlines, lease ends, session renewals, release retries. */
    private final ScheduledExecutorService timer;
    /** Completes callers' futures and runs loss callbacks, never on jetcd's threads. */
    private final ExecutorService callbacks;
    private final AtomicReference<CompletableFuture<Session>> session = new AtomicReference<>();
    private final Set<Acquisition> waiting = ConcurrentHashMap.newKeySet();
    private final Set<EtcdLockHandle> held = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    /**
     * @param client the etcd client
     * @param namespace prefix of every lock's keys, e.g. {@code distlock/}
     * @param watchdogTimeout how long a dead holder's watchdog lock lives on: the session lease's TTL, rounded up to
     * whole seconds; at most {@link LockDurations#MAX_WATCHDOG_TIMEOUT}
     */
    public EtcdLockProvider(Client client, String namespace, Duration watchdogTimeout) {
        this.client = client;
        this.kv = client.getKVClient();
        this.leases = client.getLeaseClient();
        this.watches = client.getWatchClient();
        this.namespace = checkNamespace(namespace);
        this.sessionTtlSeconds = ttlSeconds(LockDurations.checkedBetween("watchdogTimeout (distlock.watchdog-timeout)",
                watchdogTimeout, Duration.ofMillis(1), LockDurations.MAX_WATCHDOG_TIMEOUT));
        this.timer = Executors.newScheduledThreadPool(1, task -> daemon(task, "distlock-etcd-timer"));
        this.callbacks = Executors.newCachedThreadPool(task -> daemon(task, "distlock-etcd-callback"));
    }

    /**
     * Checks a namespace: not empty, so that lock keys never mix with an application's own keys.
     *
     * @throws IllegalArgumentException naming {@code distlock.etcd.namespace}, where it usually comes from
     */
    public static String checkNamespace(String namespace) {
        if (namespace == null || namespace.isBlank()) {
            throw new IllegalArgumentException("distlock.etcd.namespace must not be empty: it keeps the lock keys apart "
                    + "from other keys (default distlock/)");
        }
        return namespace;
    }

    /**
     * A duration as etcd's whole-second TTL, rounded up: a lease never ends before the time asked for. At most
     * {@link LockDurations#FOR_EVER} (about 3.2 billion seconds), below etcd's largest TTL (9 billion seconds).
     */
    static long ttlSeconds(Duration duration) {
        if (duration.isNegative() || duration.isZero()) {
            throw new IllegalArgumentException("a lease must be positive, was " + duration);
        }
        return LockDurations.ceilSeconds(LockDurations.toNanos(duration));
    }

    private static Thread daemon(Runnable task, String name) {
        Thread thread = new Thread(task, name);
        thread.setDaemon(true);
        return thread;
    }

    /** Every type; all but {@code READ} can be fenced (readers do not write). */
    @Override
    public boolean supports(LockType type, boolean fenced) {
        return !fenced || type != LockType.READ;
    }

    @Override
    public CompletableFuture<@Nullable LockHandle> acquire(LockRequest request) {
        if (!supports(request.type(), request.fenced())) {
            throw new IllegalArgumentException("etcd locks of type READ cannot be fenced: readers take no token");
        }
        if (closed) {
            throw new IllegalStateException("The etcd lock provider is closed");
        }
        encode(request.key()); // a key etcd cannot tell apart fails the caller, before anything is written
        Acquisition acquisition = new Acquisition(request);
        acquisition.start();
        return acquisition.future;
    }

    /** The prefix under which the entries of {@code key}'s lock live. */
    public String lockPrefix(String key) {
        return namespace + encode(key) + "/";
    }

    /**
     * {@code key} without {@code /} (nor {@code %}, so that encodings stay distinct).
     *
     * @throws IllegalArgumentException for a key with an unpaired surrogate: UTF-8 writes every one of them as
     * {@code ?}, so two different keys would share one lock
     */
    static String encode(String key) {
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < key.length() && Character.isLowSurrogate(key.charAt(i + 1))) {
                i++;
            }
            else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException("Lock key '" + key + "' has an unpaired surrogate (\\u"
                        + String.format("%04X", (int) c) + " at " + i + "), which etcd would store as '?'");
            }
        }
        return key.replace("%", "%25").replace("/", "%2F");
    }

    /** The client the locks live in. */
    public Client getClient() {
        return client;
    }

    /** The TTL of the session lease that watchdog locks share, in seconds, as asked of etcd. */
    public long sessionTtlSeconds() {
        return sessionTtlSeconds;
    }

    /**
     * Revokes the session lease (etcd deletes the watchdog locks still held with it; waits up to a second for the
     * answer) and stops renewing it, after telling the holders of those locks ({@link LockHandle#whenLost}); stops the
     * timers and watches. The client is left open.
     */
    @Override
    public void close() {
        closed = true;
        // the revocation below frees the watchdog locks still held, whose holders may still run: tell them first
        held.forEach(handle -> {
            if (handle.session != null) {
                handle.lost("the etcd lock provider was closed, which revokes its session lease and frees the lock");
            }
        });
        CompletableFuture<Session> current = session.getAndSet(null);
        if (current != null && current.isDone() && !current.isCompletedExceptionally()) {
            Session s = current.join();
            s.stop();
            // waited for (briefly): a client closed right after this would cut the revocation off
            try {
                leases.revoke(s.leaseId).orTimeout(1, TimeUnit.SECONDS).exceptionally(failure -> null).join();
            }
            catch (RuntimeException ignored) {
                // unreachable: the lease expires within its TTL
            }
        }
        held.forEach(EtcdLockHandle::stopWatching);
        waiting.forEach(acquisition -> acquisition.fail(new IllegalStateException("The etcd lock provider was closed")));
        timer.shutdownNow();
        callbacks.shutdown();
    }

    // ---------------------------------------------------------------- the session lease

    /** The session lease, granted when first needed and again after a loss. */
    CompletableFuture<Session> currentSession() {
        while (true) {
            CompletableFuture<Session> current = session.get();
            if (current != null && !(current.isDone()
                    && (current.isCompletedExceptionally() || current.join().lost.get()))) {
                return current;
            }
            CompletableFuture<Session> fresh = new CompletableFuture<>();
            if (session.compareAndSet(current, fresh)) {
                long asked = System.nanoTime();
                leases.grant(sessionTtlSeconds).whenComplete((grant, failure) -> {
                    if (failure != null) {
                        session.compareAndSet(fresh, null);
                        fresh.completeExceptionally(unwrap(failure));
                        return;
                    }
                    Session granted = new Session(grant.getID(), grant.getTTL(), asked, fresh);
                    fresh.complete(granted);
                    granted.start();
                });
                return fresh;
            }
        }
    }

    /**
     * The lease that watchdog locks share, renewed here every third of its TTL.
     *
     * <p>Invariant: once {@link #lost} is set, nothing is added to it for good: a holder or waiter added afterwards
     * finds it set (added first, looked second; {@link #lose} sets first, goes through the sets second).
     */
    final class Session {

        final long leaseId;
        final long ttlMillis;
        /** Renewed this often: a third of the TTL. */
        private final long period;
        /** When the latest renewal the server confirmed was sent (the lease runs at least TTL from then). */
        private volatile long confirmedAt;
        private final CompletableFuture<Session> published;
        final Set<EtcdLockHandle> holders = ConcurrentHashMap.newKeySet();
        final Set<Acquisition> waiters = ConcurrentHashMap.newKeySet();
        final AtomicBoolean lost = new AtomicBoolean();
        private final AtomicBoolean renewing = new AtomicBoolean();
        private volatile ScheduledFuture<?> renewal;

        Session(long leaseId, long ttlSeconds, long grantedSince, CompletableFuture<Session> published) {
            this.leaseId = leaseId;
            this.ttlMillis = TimeUnit.SECONDS.toMillis(ttlSeconds);
            this.period = Math.max(50, ttlMillis / 3);
            this.confirmedAt = grantedSince;
            this.published = published;
        }

        void start() {
            try {
                renewal = timer.scheduleWithFixedDelay(this::renew, period, period, TimeUnit.MILLISECONDS);
            }
            catch (RuntimeException closedMeanwhile) {
                leases.revoke(leaseId).exceptionally(failure -> null);
            }
        }

        void stop() {
            ScheduledFuture<?> task = renewal;
            if (task != null) {
                task.cancel(false);
            }
        }

        private void renew() {
            long silentFor = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - confirmedAt);
            // ">=" two periods: the second tick after the last confirmed renewal always sees at least that much
            // silence, so the holder is told a third of the TTL before etcd can expire the lease, not at about the TTL
            if (silentFor >= 2 * period) {
                lose("its etcd lease " + Long.toHexString(leaseId) + " was not renewed for " + silentFor + " ms (TTL "
                        + ttlMillis + " ms): etcd is unreachable, and the lease may expire before it can be renewed");
                return;
            }
            if (!renewing.compareAndSet(false, true)) {
                return; // the previous renewal is still under way
            }
            long sent = System.nanoTime();
            leases.keepAliveOnce(leaseId).orTimeout(ttlMillis / 3, TimeUnit.MILLISECONDS).whenComplete((answer, failure) -> {
                renewing.set(false);
                if (failure == null) {
                    if (sent - confirmedAt > 0) {
                        confirmedAt = sent;
                    }
                }
                else if (isNotFound(failure)) {
                    lose("its etcd lease " + Long.toHexString(leaseId) + " expired (etcd no longer knows it)");
                }
                // else: unreachable for now; the next renewal tries again, and the silence check above decides
            });
        }

        /** Reports every holder lost, fails every waiter, and makes the next acquisition grant a new lease. */
        void lose(String reason) {
            if (!lost.compareAndSet(false, true)) {
                return;
            }
            stop();
            session.compareAndSet(published, null);
            logger.warn("distlock: " + reason + "; " + holders.size() + " lock(s) held with it reported lost");
            for (EtcdLockHandle handle : holders) {
                handle.lost(reason);
            }
            for (Acquisition acquisition : waiters) {
                acquisition.fail(new IllegalStateException("The etcd lease of lock '" + acquisition.request.key()
                        + "' was lost while waiting: " + reason));
            }
        }
    }

    // ---------------------------------------------------------------- one acquisition

    /**
     * One acquisition, from its request to a handle, "not acquired" or a failure.
     *
     * <p>Invariant: it ends exactly once, by the compare-and-set out of WAITING; whatever ends it second backs off. An
     * entry created for an acquisition that was abandoned is deleted by whichever of "entry created" and "abandoned"
     * comes second: the creation publishes {@link #revision} and then reads the state; the abandoning sets the state
     * and then reads {@link #revision}.
     */
    final class Acquisition {

        private static final int WAITING = 0;
        private static final int ACQUIRED = 1;
        private static final int ABANDONED = 2;

        final LockRequest request;
        final boolean exclusive;
        final String prefix;
        final ByteSequence entry;
        final CompletableFuture<LockHandle> future = new CompletableFuture<>();
        private final AtomicInteger state = new AtomicInteger(WAITING);
        /** The entry's create revision; 0 until it is created. */
        private volatile long revision;
        private volatile Session session;
        private volatile boolean deadlinePassed;
        private volatile boolean sawItTaken;
        private volatile ScheduledFuture<?> deadline;
        private final AtomicReference<Watch.Watcher> watcher = new AtomicReference<>();

        Acquisition(LockRequest request) {
            this.request = request;
            this.exclusive = request.type().exclusive();
            this.prefix = lockPrefix(request.key());
            this.entry = bytes(prefix + (exclusive ? "w/" : "r/") + clientId + "-" + Long.toHexString(request.owner().id()));
        }

        /** Where the entries this one waits for are: every entry for an exclusive lock, writers' for a reader. */
        private ByteSequence blockers() {
            return bytes(exclusive ? prefix : prefix + "w/");
        }

        void start() {
            waiting.add(this);
            future.whenComplete((handle, failure) -> {
                if (future.isCancelled()) {
                    abandon();
                }
            });
            if (request.waitNanos() == 0) {
                // one try: when the lock is visibly taken, answer without creating an entry and deleting it again
                kv.get(blockers(), GetOption.builder().isPrefix(true).withCountOnly(true).build())
                        .whenComplete((answer, failure) -> guarded(() -> {
                            if (failure != null) {
                                fail(unwrap(failure));
                            }
                            else if (answer.getCount() > 0) {
                                sawItTaken = true;
                                giveUp();
                            }
                            else {
                                create(false);
                            }
                        }));
            }
            else {
                deadline = schedule(this::deadlineReached, request.waitNanos());
                create(false);
            }
        }

        private void create(boolean retried) {
            if (state.get() != WAITING) {
                return;
            }
            currentSession().whenComplete((s, failure) -> guarded(() -> {
                if (failure != null) {
                    fail(unwrap(failure));
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
                kv.txn().If(new Cmp(entry, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
                        .Then(Op.put(entry, NO_VALUE, PutOption.builder().withLeaseId(s.leaseId).build()))
                        .Else(Op.get(entry, GetOption.DEFAULT))
                        .commit().whenComplete((answer, txnFailure) -> guarded(() -> {
                            if (txnFailure != null) {
                                if (!isNotFound(txnFailure)) {
                                    // the answer may have been lost after etcd created the entry: delete it (its name
                                    // is this acquisition's alone), or it stays on the renewed session lease for good
                                    deleteEntry();
                                }
                                if (isNotFound(txnFailure) && !retried) {
                                    // the session lease expired on the server before we noticed: a new one, once
                                    s.waiters.remove(this);
                                    s.lose("its etcd lease " + Long.toHexString(s.leaseId) + " expired (etcd no longer knows it)");
                                    create(true);
                                }
                                else {
                                    fail(unwrap(txnFailure));
                                }
                                return;
                            }
                            created(answer.isSucceeded() ? answer.getHeader().getRevision()
                                    : answer.getGetResponses().get(0).getKvs().get(0).getCreateRevision());
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
            GetOption lastBefore = GetOption.builder().isPrefix(true).withMaxCreateRevision(revision - 1)
                    .withSortField(GetOption.SortTarget.CREATE).withSortOrder(GetOption.SortOrder.DESCEND)
                    .withLimit(1).withKeysOnly(true).build();
            kv.txn().If(new Cmp(entry, Cmp.Op.EQUAL, CmpTarget.createRevision(revision)))
                    .Then(Op.get(blockers(), lastBefore)).commit().whenComplete((answer, failure) -> guarded(() -> {
                        if (failure != null) {
                            fail(unwrap(failure));
                        }
                        else if (!answer.isSucceeded()) {
                            fail(new IllegalStateException("The etcd entry " + text(entry) + " of lock '" + request.key()
                                    + "' vanished while waiting (its lease expired or was revoked, or it was deleted)"));
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
            KeyValue blocker = answer.getKvs().get(0);
            // from the revision just read: a deletion after the read is replayed, so none is missed
            WatchOption deletions = WatchOption.builder().withRevision(readRevision + 1)
                    .withNoPut(true).build();
            AtomicBoolean woken = new AtomicBoolean();
            Watch.Watcher next = watches.watch(blocker.getKey(), deletions, Watch.listener(response -> {
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
            closeQuietly(watcher.getAndSet(next));
            if (state.get() != WAITING) {
                closeQuietly(watcher.getAndSet(null));
            }
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
            Session s = session;
            long token = request.fenced() ? readRevision : -1;
            if (request.watchdog()) {
                handOut(new EtcdLockHandle(EtcdLockProvider.this, request, entry, revision, s.leaseId, s, token),
                        readRevision);
                return;
            }
            // a fixed lease: a lease of its own from now on, so that it runs from the acquisition, not the request
            leases.grant(ttlSeconds(Duration.ofNanos(request.leaseNanos()))).thenCompose(grant -> kv.txn()
                    .If(new Cmp(entry, Cmp.Op.EQUAL, CmpTarget.createRevision(revision)))
                    .Then(Op.put(entry, NO_VALUE, PutOption.builder().withLeaseId(grant.getID()).build()))
                    .commit().thenApply(answer -> {
                        if (!answer.isSucceeded()) {
                            leases.revoke(grant.getID()).exceptionally(failure -> null);
                            throw new IllegalStateException("The etcd entry of lock '" + request.key()
                                    + "' was gone before its lease could be set (its session lease expired, or it was deleted)");
                        }
                        return new EtcdLockHandle(EtcdLockProvider.this, request, entry, revision, grant.getID(), null, token);
                    }).thenAccept(handle -> handOut(handle, readRevision))).whenComplete((ignored, failure) -> {
                        if (failure != null) {
                            deleteEntry();
                            runCallback(() -> future.completeExceptionally(unwrap(failure)));
                        }
                    });
        }

        private void handOut(EtcdLockHandle handle, long fromRevision) {
            held.add(handle);
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
                runCallback(() -> future.completeExceptionally(closedMeanwhile));
                return;
            }
            runCallback(() -> {
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
                runCallback(() -> future.complete(null));
                return;
            }
            deleteEntry().whenComplete((ignored, failure) -> runCallback(() -> future.complete(null)));
        }

        void fail(Throwable failure) {
            if (!state.compareAndSet(WAITING, ABANDONED)) {
                return;
            }
            endWaiting();
            if (revision != 0) {
                deleteEntry();
            }
            runCallback(() -> future.completeExceptionally(failure));
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
            kv.delete(entry).whenComplete((ignored, failure) -> {
                firstTry.complete(null);
                Session s = session;
                if (failure == null || closed || (s != null && s.lost.get())) {
                    return;
                }
                try {
                    schedule(() -> deleteEntry(firstTry), TimeUnit.SECONDS.toNanos(1));
                }
                catch (IllegalStateException closedMeanwhile) {
                    // closed: the session lease is revoked, and the entry with it
                }
            });
        }

        private void endWaiting() {
            waiting.remove(this);
            Session s = session;
            if (s != null) {
                s.waiters.remove(this);
            }
            ScheduledFuture<?> task = deadline;
            if (task != null) {
                task.cancel(false);
            }
            closeQuietly(watcher.getAndSet(null));
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

    // ---------------------------------------------------------------- shared with the handle

    KV kv() {
        return kv;
    }

    Lease leases() {
        return leases;
    }

    Watch watches() {
        return watches;
    }

    void forget(EtcdLockHandle handle) {
        held.remove(handle);
        if (handle.session != null) {
            handle.session.holders.remove(handle);
        }
    }

    ScheduledFuture<?> schedule(Runnable task, long nanos) {
        try {
            return timer.schedule(task, nanos, TimeUnit.NANOSECONDS);
        }
        catch (RuntimeException rejected) {
            throw new IllegalStateException("The etcd lock provider is closed", rejected);
        }
    }

    void runCallback(Runnable task) {
        try {
            callbacks.execute(task);
        }
        catch (RuntimeException rejected) {
            task.run(); // closed: run here rather than leave a caller waiting forever
        }
    }

    boolean isClosed() {
        return closed;
    }

    static String text(ByteSequence bytes) {
        return bytes.toString(StandardCharsets.UTF_8);
    }

    static ByteSequence bytes(String text) {
        return ByteSequence.from(text, StandardCharsets.UTF_8);
    }

    static void closeQuietly(Watch.Watcher watcher) {
        if (watcher != null) {
            try {
                watcher.close();
            }
            catch (RuntimeException ignored) {
                // closing a watch that broke
            }
        }
    }

    static boolean isNotFound(Throwable failure) {
        return unwrap(failure) instanceof EtcdException etcd && etcd.getErrorCode() == ErrorCode.NOT_FOUND;
    }

    static Throwable unwrap(Throwable failure) {
        Throwable cause = failure;
        while (cause instanceof CompletionException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }

    static Log log() {
        return logger;
    }
}

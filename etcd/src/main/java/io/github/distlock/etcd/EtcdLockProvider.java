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

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
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

    private final Client client;
    /** The reads, transactions, leases and watches the locks are made of. */
    private final EtcdLockRepository repository;
    private final String namespace;
    private final long sessionTtlSeconds;
    /** Makes entry names unique across processes: every acquisition's owner id is unique only in its process. */
    private final String clientId = UUID.randomUUID().toString();
    /** Wait deadlines, lease ends, session renewals, release retries. */
    private final ScheduledExecutorService timer;
    /** Completes callers' futures and runs loss callbacks, never on jetcd's threads. */
    private final ExecutorService callbacks;
    /** The session lease that watchdog locks share, and its renewal. */
    private final EtcdSessions sessions;
    private final Set<EtcdAcquisition> waiting = ConcurrentHashMap.newKeySet();
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
        this.repository = new EtcdLockRepository(client);
        this.namespace = checkNamespace(namespace);
        this.sessionTtlSeconds = ttlSeconds(LockDurations.checkedBetween("watchdogTimeout (distlock.watchdog-timeout)",
                watchdogTimeout, Duration.ofMillis(1), LockDurations.MAX_WATCHDOG_TIMEOUT));
        this.timer = Executors.newScheduledThreadPool(1, task -> daemon(task, "distlock-etcd-timer"));
        this.callbacks = Executors.newCachedThreadPool(task -> daemon(task, "distlock-etcd-callback"));
        this.sessions = new EtcdSessions(repository, timer, sessionTtlSeconds);
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
        EtcdAcquisition acquisition = new EtcdAcquisition(this, request);
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
        sessions.revokeCurrent();
        held.forEach(EtcdLockHandle::stopWatching);
        waiting.forEach(acquisition -> acquisition.fail(new IllegalStateException("The etcd lock provider was closed")));
        timer.shutdownNow();
        callbacks.shutdown();
    }

    // ---------------------------------------------------------------- shared with acquisitions and handles

    EtcdLockRepository repository() {
        return repository;
    }

    EtcdSessions sessions() {
        return sessions;
    }

    /** Makes entry names unique across processes. */
    String clientId() {
        return clientId;
    }

    void startedWaiting(EtcdAcquisition acquisition) {
        waiting.add(acquisition);
    }

    void stoppedWaiting(EtcdAcquisition acquisition) {
        waiting.remove(acquisition);
    }

    void hold(EtcdLockHandle handle) {
        held.add(handle);
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

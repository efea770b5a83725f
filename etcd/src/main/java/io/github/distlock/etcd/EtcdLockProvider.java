package io.github.distlock.etcd;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
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
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
import io.etcd.jetcd.kv.TxnResponse;
import io.github.distlock.LockKeyClosedException;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockDurations;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockHolderInfo;
import io.github.distlock.spi.LockInspector;
import io.github.distlock.spi.LockInstance;
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
 * {@code WRITE}) are {@code <prefix>w/<client>-<owner hex>}, readers' {@code <prefix>r/<client>-<owner hex>}, each
 * holding its mode ({@code exclusive}, {@code write}, {@code read}). All types of one key exclude each other unless
 * both read; every type is first come, first served. An etcd mutex on the same prefix
 * ({@code etcdctl lock <namespace><key>}) excludes and is excluded by our exclusive locks.
 *
 * <p>Beside the locks, two paths no lock's prefix can contain (an encoded key never has a {@code %} followed by a
 * letter): {@code <namespace>%closed/<key>}, the marker of a {@linkplain #closeKey closed} key, holding the reason;
 * and {@code <namespace>%instances/<client>}, each instance's {@linkplain #announce announcement}.
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
 * <h2>Operations</h2>
 * {@link #holders} reads the entries under the key's prefix and names the ones that hold by the recipe's rules (a
 * reader when no writer entry is older, any other entry when it is the oldest of all), with the time left of their
 * lease; {@link #forceRelease(String)} deletes those entries in one transaction that compares the mod revisions of
 * what decides who holds (the holders' entries and the oldest writer entry), reading again on a conflicting change.
 * Each holder watches its own entry: an evicted holder is told through {@link LockHandle#whenLost} as soon as etcd
 * reports the deletion, on any instance; its release then answers {@code false} and touches nothing.
 *
 * <p>The client belongs to the caller: {@link #close()} revokes the session lease (freeing the locks still held) and
 * stops this provider's timers, not the client.
 */
public class EtcdLockProvider implements LockProvider, LockInspector, AutoCloseable {

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
    private final EtcdLockInspector inspector;
    private final EtcdInstances instances;
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
        this.inspector = new EtcdLockInspector(this, repository);
        this.instances = new EtcdInstances(this, repository);
        this.sessions.onLost(instances::sessionLost);
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

    /** The marker of {@code key} while it is {@linkplain #closeKey closed}: outside every lock's prefix. */
    public String closedMarker(String key) {
        return namespace + "%closed/" + encode(key);
    }

    /** Where instances {@linkplain #announce announce} themselves, one key per client id. */
    String instancesPrefix() {
        return namespace + "%instances/";
    }

    String instanceKey() {
        return instancesPrefix() + clientId;
    }

    /** What an entry of a lock of {@code type} holds: how {@link #holders} names its mode. */
    static String mode(LockType type) {
        return switch (type) {
            case READ -> "read";
            case WRITE -> "write";
            default -> "exclusive";
        };
    }

    // ---------------------------------------------------------------- closing keys

    /**
     * Closes {@code key} for every type: puts its marker ({@link #closedMarker}) with {@code reason}, kept until
     * {@link #reopenKey} on any instance.
     *
     * <p>Invariant: no entry is created and no lock is granted while the marker exists. Each acquisition's create
     * transaction, and each look at whether it now holds the lock, requires the marker's version to be 0 in the
     * same transaction, so a closed key costs no extra round trip and no newcomer slips in while it closes; and a
     * waiter watches the marker from the revision of its last look on, so a close after that look is never missed.
     * A waiter told fails with {@link LockKeyClosedException} ("Lock '&lt;key&gt;' is closed: &lt;reason&gt;") and
     * deletes its entry; a try that finds the key closed fails the same way, even when the key is free. A holder
     * (granted by a look before the close) keeps its lock and releases it as usual.
     *
     * @return the entries queued behind the holders when the marker was put, on every instance, read in the same
     * transaction: each of them is told. An estimate in two ways: a waiter giving up at that moment is counted (and
     * answers "not acquired"), and an entry of another client on the prefix (an etcd mutex) is counted and not told
     * @throws IllegalArgumentException for a key etcd cannot store apart from others, or a null reason
     */
    @Override
    public long closeKey(String key, String reason) {
        if (reason == null) {
            throw new IllegalArgumentException("closeKey: reason must not be null");
        }
        String prefix = lockPrefix(key);
        TxnResponse answer = join(repository.close(bytes(closedMarker(key)), bytes(reason), bytes(prefix)));
        List<KeyValue> entries = new ArrayList<>(answer.getGetResponses().get(0).getKvs());
        entries.sort(Comparator.comparingLong(KeyValue::getCreateRevision));
        long waiters = entries.size() - EtcdLockInspector.holding(entries, prefix).size();
        log().info("distlock: lock '" + key + "' closed in etcd (" + reason + "); " + waiters + " waiter(s) told");
        return waiters;
    }

    /** Deletes the marker of {@code key}: every instance's acquisitions of it work again. */
    @Override
    public void reopenKey(String key) {
        join(repository.delete(bytes(closedMarker(key))));
    }

    // ---------------------------------------------------------------- operations

    /**
     * The holders of {@code key} on any instance: see "Operations" above. The owner is {@link #ownerName} of the
     * holder's instance (an entry of another client on the prefix is named by its key under the prefix, without an
     * instance); the mode {@code exclusive} ({@code REENTRANT}, {@code FAIR}), {@code write} or {@code read};
     * {@code remaining} the time left of the entry's etcd lease, in whole seconds (a fixed lease's own timer ends
     * it up to a second earlier).
     */
    @Override
    public List<LockHolderInfo> holders(String key) {
        return inspector.holders(key);
    }

    /** Deletes the holders' entries in one transaction: see "Operations" above. */
    @Override
    public List<LockHolderInfo> forceRelease(String key) {
        return inspector.forceRelease(key, null).holders();
    }

    /**
     * Like {@link #forceRelease(String)}, deleting only the entries of {@code expectedOwner} (as {@link #holders}
     * names it), if it still holds: the other readers keep theirs.
     */
    @Override
    public ForceRelease forceRelease(String key, @Nullable String expectedOwner) {
        return inspector.forceRelease(key, expectedOwner);
    }

    /** {@code <client id>:<owner id>}: the client id is the one in this provider's entry names. */
    @Override
    public String ownerName(long ownerId) {
        return clientId + ":" + ownerId;
    }

    /** A read of one key, within {@code timeout}; {@code false} on no answer in time or a failure, never a throw. */
    @Override
    public boolean ping(Duration timeout) {
        Objects.requireNonNull(timeout, "ping: timeout must not be null");
        return inspector.ping(timeout);
    }

    /**
     * Puts {@code self} under {@code <namespace>%instances/<client id>} on the session lease (it expires with this
     * instance, and again after a new session lease), without waiting: a write that fails is tried again every
     * second.
     */
    @Override
    public void announce(LockInstance self) {
        instances.announce(self);
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

    static <T> T join(CompletableFuture<T> future) {
        try {
            return future.join();
        }
        catch (CompletionException ex) {
            Throwable cause = unwrap(ex);
            throw (cause instanceof RuntimeException runtime) ? runtime : ex;
        }
    }

    static Log log() {
        return logger;
    }
}

package io.github.distlock.redisson;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.ToIntFunction;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * Watches the watchdog-renewed locks this process holds, because Redisson does not say when renewal fails (it only
 * logs; Redisson #4698): every third of the watchdog timeout it asks Redis whether each lock is still its holder's.
 * A lock found gone or owned by another, or not confirmed for a whole watchdog timeout (Redis unreachable: renewal
 * cannot have succeeded either, so the key has expired or is about to), is reported lost while its method still runs.
 *
 * <p>Redisson's own locks ({@link RLockKind}) are asked in chunks: one script per chunk of up to {@link #CHUNK} keys
 * ({@link #RENEW_SCRIPT}) renews each lock still held by its owner field ({@code HGET}, then {@code PEXPIRE} the
 * watchdog timeout, and a reader's timeout key with it) and answers which were not held, so that renewal
 * and loss detection are one command per chunk, not one per lock. Chunks go out pipelined, up to
 * {@link #CHUNKS_PER_BATCH} in a batch and at most {@link #IN_FLIGHT} batches on their way, the next sent as one
 * answers: neither one after another nor all at once. On Redis Cluster a chunk holds the keys of one slot and is
 * routed by its first key; the script writes, so it goes to the master. Other kinds (FAIR, permits) are asked one lock
 * at a time ({@link RedisLockKind#confirm}).
 *
 * <p>Invariants: a handle is removed from the watch set before its unlock is sent, so a "not held" answer that
 * arrives after the release began is never reported as a loss. Only bookkeeping runs on the monitor's thread; losses
 * are reported on a thread of their own, so a listener that blocks or throws can neither delay the confirmation of
 * other locks (which would make healthy locks look lost) nor stop the monitor. The renewal script extends a key only
 * while the handle's own owner field is in it (checked in the same script, so nothing runs in between): a renewal
 * that races a release, or arrives after the key expired and another owner took it, never re-creates the key nor
 * extends another owner's lock ({@code PEXPIRE} creates nothing, and it is not sent when the field is missing). A
 * lock is in at most one chunk at a time (its {@code checking} flag), and a chunk that failed or did not answer within
 * two periods (Redis unreachable) confirms nothing: its locks are asked again next period and reported once a whole
 * timeout passed unconfirmed. Each chunk counts by its own script's answer, so one failing node or script in a batch
 * costs the other chunks nothing. Closing the monitor reports every lock still watched lost: nothing renews it any
 * more.
 */
final class LeaseMonitor implements AutoCloseable {

    private static final Log logger = LogFactory.getLog(LeaseMonitor.class);

    /**
     * Keys per renewal script: five times Redisson's default chunk (fewer commands to encode and answer), while one
     * script, two commands per key, still runs in about a millisecond and holds up other clients no longer.
     * Chosen, not tuned: not measured against other sizes.
     */
    static final int CHUNK = 500;
    /**
     * Renewal scripts sent together, pipelined (one batch per Redis node): on a cluster a chunk holds the keys of one
     * slot, often a single key, and thousands of scripts sent one by one would cost a round trip each.
     */
    static final int CHUNKS_PER_BATCH = 64;
    /** Batches on their way at once: enough to hide the round trip, few enough not to queue up others' commands. */
    static final int IN_FLIGHT = 4;

    /**
     * One chunk's locks share a slot, an extension and a form of owner field; its ARGV: the field's head
     * ({@code <client id>:}), the milliseconds to extend each lock by ({@code 0}: only ask), the field's tail
     * ({@code :write} for a writer, else empty), {@code r} for readers (else empty), and the owner ids, one per key in
     * KEYS' order, joined by commas: a key's owner field is head, owner id, tail. A reader's hold has a timeout key of
     * its own per entry that Redisson's read-lock scripts read ({@code <hash>:<field>:rwlock_timeout:<n>}, the hash's
     * name being braced), extended with it as Redisson's read-lock renewal does. A read/write hash, a writer's too, is
     * extended only when its time to live is shorter: its readers, the writer's own among them, may hold longer fixed
     * leases, and a writer that shortened the hash would let another writer in while they still read. Returns the
     * (1-based) positions of the keys whose owner field was missing; an error when the owners do not match the keys
     * one for one (nothing is confirmed then).
     *
     * <p>The owners travel in one argument, not one each: per key the client encodes a few digits, not a field of 40
     * characters, and one argument per chunk goes through Redisson's encoding. Redis spends about what Redisson's own
     * renewal script costs per key, and about a quarter less than with the former three arguments per key
     * ({@code benchmarks/scripts/renewal_cost.py}).
     */
    static final String RENEW_SCRIPT = """
            local lost = {}
            local head, millis, tail, reader = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4] == 'r'
            local shared = reader or tail ~= ''
            local i = 0
            for owner in string.gmatch(ARGV[5], '[^,]+') do
              i = i + 1
              local field = head .. owner .. tail
              -- pcall: a key overwritten with another type is one lost lock, not a failed script for the whole chunk
              local count = redis.pcall('hget', KEYS[i], field)
              if count and type(count) ~= 'table' then
                if millis > 0 then
                  if not shared then
                    redis.call('pexpire', KEYS[i], ARGV[2])
                  elseif redis.call('pttl', KEYS[i]) < millis then
                    -- a read/write hash is shared with readers (the writer's own too), whose leases may be longer (a
                    -- fixed lease): never shorten its life
                    redis.call('pexpire', KEYS[i], ARGV[2])
                  end
                  if reader then
                    for n = tonumber(count), 1, -1 do
                      redis.call('pexpire', KEYS[i] .. ':' .. field .. ':rwlock_timeout:' .. n, ARGV[2])
                    end
                  end
                end
              else
                lost[#lost + 1] = i
              end
            end
            if i ~= #KEYS then
              return redis.error_reply('distlock renewal: ' .. i .. ' owners for ' .. #KEYS .. ' keys')
            end
            return lost
            """;

    /** What the locks of one chunk share: their slot, their extension and the form of their owner field. */
    record Group(int slot, long millis, String tail, boolean reader) {
    }

    /** The renewal script's keys and arguments for some locks, all in one slot. */
    record Chunk(List<RedissonLockHandle> handles, List<Object> keys, List<Object> args) {
    }

    /**
     * Sends the renewal script of each chunk, routed by its first key to its master, pipelined; answers one future
     * per chunk, in the chunks' order, each with its own script's list or failure.
     */
    @FunctionalInterface
    interface ChunkSender {
        List<CompletableFuture<List<Object>>> send(List<Chunk> chunks);
    }

    private final Set<RedissonLockHandle> watched = ConcurrentHashMap.newKeySet();
    private final long timeoutNanos;
    private final long periodMillis;
    /** How long a chunk's answer is waited for: two periods, and at least a second. */
    private final long answerTimeoutMillis;
    private final ChunkSender sender;
    /** Every owner field this monitor renews starts with it: {@code <client id>:}. */
    private final byte[] fieldHeadBytes;
    /** The Redis Cluster slot of a key; {@code null} when every key may go in one script. */
    private final ToIntFunction<String> slots;
    /** Chunks built but not yet sent; touched on the monitor's thread only. */
    private final ArrayDeque<Chunk> pending = new ArrayDeque<>();
    /** Batches sent and not yet answered; touched on the monitor's thread only. */
    private int inFlight;
    private volatile ScheduledExecutorService timer;
    private volatile ExecutorService reporter;
    private boolean closed;

    /**
     * @param fieldHead what every owner field of the locks watched starts with, before the owner id
     * @param sender sends one chunk's renewal script
     * @param slots the cluster slot of a key, {@code null} on a single server or a replicated one
     */
    LeaseMonitor(long watchdogTimeoutMillis, String fieldHead, ChunkSender sender, ToIntFunction<String> slots) {
        this.timeoutNanos = TimeUnit.MILLISECONDS.toNanos(watchdogTimeoutMillis);
        this.periodMillis = Math.max(1, watchdogTimeoutMillis / 3);
        this.answerTimeoutMillis = answerTimeoutMillis(watchdogTimeoutMillis);
        this.sender = sender;
        this.fieldHeadBytes = fieldHead.getBytes(StandardCharsets.UTF_8);
        this.slots = slots;
    }

    /** How long a renewal chunk's answer is waited for: two periods, and at least a second. */
    static long answerTimeoutMillis(long watchdogTimeoutMillis) {
        return Math.max(1000, 2 * Math.max(1, watchdogTimeoutMillis / 3));
    }

    /**
     * Watches {@code handle} from now on; {@code false} once the monitor is closed (nothing would renew it), when the
     * caller must not hand the lock out.
     */
    boolean watch(RedissonLockHandle handle) {
        long millis = handle.batchedRenewalMillis();
        if (millis >= 0 && handle.renewalGroup == null) {
            handle.renewalGroup = group(handle, millis);
        }
        handle.confirmedAt = System.nanoTime();
        synchronized (this) {
            // under the monitor's lock: close() sets closed under it and then takes every watched lock, so a lock is
            // either refused here or found and reported by close()
            if (closed) {
                return false;
            }
            watched.add(handle);
        }
        if (timer == null) {
            start();
        }
        return true;
    }

    void unwatch(RedissonLockHandle handle) {
        watched.remove(handle);
    }

    private synchronized void start() {
        if (timer == null && !closed) {
            startReporter();
            ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor(
                    task -> daemon(task, "distlock-lease-monitor"));
            // published before the first check runs, which hands its answers to this executor
            timer = executor;
            executor.scheduleWithFixedDelay(this::check, periodMillis, periodMillis, TimeUnit.MILLISECONDS);
        }
    }

    /** A thread per report (losses are rare): a listener that blocks holds up no other lock's report. */
    private synchronized ExecutorService startReporter() {
        if (closed) {
            throw new java.util.concurrent.RejectedExecutionException("closed");
        }
        if (reporter == null) {
            reporter = Executors.newCachedThreadPool(task -> daemon(task, "distlock-lease-lost"));
        }
        return reporter;
    }

    /**
     * Reports {@code handle} lost now, found by other means than the lease check (an operator's force release): it is
     * no longer checked, and its listener runs on a reporting thread, as the check's reports do.
     */
    void reportLost(RedissonLockHandle handle, String reason) {
        watched.remove(handle);
        report(handle, reason);
    }

    private static Thread daemon(Runnable task, String name) {
        Thread thread = new Thread(task, name);
        thread.setDaemon(true);
        return thread;
    }

    private void check() {
        try {
            long now = System.nanoTime();
            Map<Group, List<RedissonLockHandle>> batched = new HashMap<>();
            for (RedissonLockHandle handle : watched) {
                if (now - handle.confirmedAt > timeoutNanos) {
                    if (watched.remove(handle)) {
                        report(handle, "not confirmed by Redis for " + TimeUnit.NANOSECONDS.toMillis(now - handle.confirmedAt)
                                + " ms (watchdog timeout " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos)
                                + " ms): renewal cannot have succeeded, so the lock has expired or is about to");
                    }
                    continue;
                }
                if (handle.checking) {
                    continue;
                }
                handle.checking = true;
                Group group = handle.renewalGroup;
                if (group != null) {
                    batched.computeIfAbsent(group, unused -> new ArrayList<>()).add(handle);
                }
                else {
                    confirmOne(handle);
                }
            }
            for (Map.Entry<Group, List<RedissonLockHandle>> group : batched.entrySet()) {
                List<RedissonLockHandle> handles = group.getValue();
                for (int from = 0; from < handles.size(); from += CHUNK) {
                    List<RedissonLockHandle> part = handles.subList(from, Math.min(handles.size(), from + CHUNK));
                    try {
                        pending.add(chunk(group.getKey(), part));
                    }
                    catch (RuntimeException ex) {
                        // asked again next period, reported once unconfirmed for a whole timeout: never left marked
                        // as on their way, which would keep them out of every later chunk
                        part.forEach(handle -> handle.checking = false);
                        logger.error("Building a renewal chunk failed; will retry", ex);
                    }
                }
            }
            sendPending();
        }
        catch (Throwable ex) {
            // the timer must survive anything: a dead monitor would silently stop reporting losses
            logger.error("Lease check failed; will retry", ex);
        }
    }

    private void confirmOne(RedissonLockHandle handle) {
        long sentAt = System.nanoTime();
        // completed on this monitor's thread, not Redisson's event loop, and only for bookkeeping
        handle.confirm().whenCompleteAsync((held, failure) -> {
            handle.checking = false;
            if (failure != null) {
                return;
            }
            if (held) {
                handle.confirmedAt = sentAt;
            }
            else if (watched.remove(handle)) {
                report(handle, "its key is gone from Redis or belongs to another holder");
            }
        }, timer);
    }

    /**
     * The chunk group of a lock renewed in chunks, found once when it is first watched. The script rebuilds the owner
     * field from the head, the owner id and the tail, as {@link RedissonLockProvider#ownerField} builds it; the slot
     * is the mapped name's, the key the script is sent under (Redisson maps KEYS through the client's
     * {@code NameMapper}, which may move a key to another slot).
     */
    private Group group(RedissonLockHandle handle, long millis) {
        boolean reader = handle.lock() instanceof org.redisson.RedissonReadLock;
        String tail = (handle.lock() instanceof org.redisson.RedissonWriteLock) ? ":write" : "";
        int slot = (slots == null) ? 0 : slots.applyAsInt(((org.redisson.RedissonObject) handle.lock()).getRawName());
        return new Group(slot, millis, tail, reader);
    }

    private Chunk chunk(Group group, List<RedissonLockHandle> handles) {
        List<Object> keys = new ArrayList<>(handles.size());
        StringBuilder owners = new StringBuilder(handles.size() * 8);
        for (RedissonLockHandle handle : handles) {
            keys.add(handle.lock().getName());
            if (owners.length() > 0) {
                owners.append(',');
            }
            owners.append(handle.owner());
        }
        List<Object> args = List.of(fieldHeadBytes, ascii(Long.toString(group.millis())), ascii(group.tail()),
                ascii(group.reader() ? "r" : ""), ascii(owners));
        return new Chunk(handles, keys, args);
    }

    private static byte[] ascii(CharSequence text) {
        return text.toString().getBytes(StandardCharsets.US_ASCII);
    }

    /** Sends queued chunks, in batches, while fewer than {@link #IN_FLIGHT} batches are on their way. */
    private void sendPending() {
        while (inFlight < IN_FLIGHT && !pending.isEmpty()) {
            List<Chunk> batch = new ArrayList<>();
            while (batch.size() < CHUNKS_PER_BATCH && !pending.isEmpty()) {
                batch.add(pending.poll());
            }
            send(batch);
        }
    }

    private void send(List<Chunk> batch) {
        inFlight++;
        long sentAt = System.nanoTime();
        List<CompletableFuture<List<Object>>> answers;
        try {
            answers = sender.send(batch);
        }
        catch (RuntimeException ex) {
            answers = new ArrayList<>();
            for (int i = 0; i < batch.size(); i++) {
                answers.add(CompletableFuture.failedFuture(ex));
            }
        }
        CompletableFuture<?>[] each = new CompletableFuture<?>[batch.size()];
        java.util.concurrent.atomic.AtomicReference<Throwable> firstFailure = new java.util.concurrent.atomic.AtomicReference<>();
        for (int i = 0; i < batch.size(); i++) {
            List<RedissonLockHandle> handles = batch.get(i).handles();
            // bounded: a batch that never answers (a hung connection) would otherwise keep its slot for good, and
            // once all slots were taken nothing would be renewed again; a script that runs after its answer timed out
            // only renews locks still held by their owners
            each[i] = answers.get(i).orTimeout(answerTimeoutMillis, TimeUnit.MILLISECONDS)
                    .handleAsync((notHeld, failure) -> {
                        Throwable problem = (failure == null && notHeld == null)
                                ? new IllegalStateException("no answer from the renewal script") : failure;
                        if (problem != null) {
                            firstFailure.compareAndSet(null, problem);
                        }
                        answered(handles, sentAt, notHeld, problem);
                        return null;
                    }, timer);
        }
        // completed on this monitor's thread, not Redisson's event loop
        CompletableFuture.allOf(each).whenCompleteAsync((ignored, unexpected) -> {
            inFlight--;
            Throwable failure = firstFailure.get();
            if (failure != null) {
                // its locks are reported once unconfirmed for a whole timeout; until then this says why
                logger.warn("Renewing some of " + batch.size() + " chunks of watchdog locks failed; will retry", failure);
            }
            sendPending();
        }, timer);
    }

    private void answered(List<RedissonLockHandle> chunk, long sentAt, List<Object> notHeld, Throwable failure) {
        boolean[] gone = new boolean[chunk.size()];
        if (failure == null && notHeld != null) {
            for (Object position : notHeld) {
                int index = (position instanceof Number number) ? number.intValue() - 1 : -1;
                if (index < 0 || index >= gone.length) {
                    // not what the script answers: trust none of it, as for a failed chunk
                    failure = new IllegalStateException("renewal script answered position " + position + " for "
                            + chunk.size() + " keys");
                    logger.warn("Renewal chunk answer not understood; its locks are asked again next period", failure);
                    break;
                }
                gone[index] = true;
            }
        }
        for (int i = 0; i < chunk.size(); i++) {
            RedissonLockHandle handle = chunk.get(i);
            handle.checking = false;
            if (failure != null) {
                continue;
            }
            if (!gone[i]) {
                handle.confirmedAt = sentAt;
            }
            else if (watched.remove(handle)) {
                report(handle, "its key is gone from Redis or belongs to another holder");
            }
        }
    }

    private void report(RedissonLockHandle handle, String reason) {
        try {
            ExecutorService executor = reporter;
            if (executor == null) {
                executor = startReporter();
            }
            executor.execute(() -> {
                try {
                    handle.lost(reason);
                }
                catch (Throwable ex) {
                    logger.error("Reporting the loss of lock '" + handle.lock().getName() + "' failed", ex);
                }
            });
        }
        catch (java.util.concurrent.RejectedExecutionException closing) {
            // the provider is closing (a check still running as it closed): the holder is told here instead
            try {
                handle.lost(reason);
            }
            catch (Throwable ex) {
                logger.error("Reporting the loss of lock '" + handle.lock().getName() + "' failed", ex);
            }
        }
    }

    /** Locks watched right now. */
    int watchedCount() {
        return watched.size();
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
        }
        ScheduledExecutorService executor = timer;
        if (executor != null) {
            executor.shutdownNow();
        }
        // Nobody renews them from now on: their holders are told (on the reporting threads, as every report), rather
        // than finding out from a second holder
        for (RedissonLockHandle handle : watched) {
            if (watched.remove(handle)) {
                report(handle, "the Redis lock provider was closed while the lock was held: it is no longer renewed"
                        + " and expires within the watchdog timeout");
            }
        }
        ExecutorService reports = reporter;
        if (reports != null) {
            reports.shutdown();
        }
    }
}

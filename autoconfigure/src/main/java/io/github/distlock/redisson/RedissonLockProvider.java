package io.github.distlock.redisson;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import org.redisson.RedissonObject;
import org.redisson.api.RFencedLock;
import org.redisson.api.RScript;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.LongCodec;

/**
 * Locks on Redisson's {@link RLock} (a Redis hash owned by {@code <client id>:<thread id>}, reentrant, with
 * publish/subscribe wake-up of waiters), or {@link RFencedLock} when a fencing token is asked for.
 *
 * <p>A fresh lock object is taken per call: Redisson's lock objects keep per-acquisition state.
 */
public class RedissonLockProvider implements LockProvider, AutoCloseable {

    /** Redisson's lease value for "no fixed lease: renew by watchdog". */
    private static final long WATCHDOG = -1;

    private static final Long NOT_FENCED = -1L;

    /** How long an unused fencing counter is kept; see {@link #seedFencingCounter}. */
    private static final Duration FENCING_COUNTER_TTL = Duration.ofDays(7);

    /** A missing counter starts at Redis's clock in microseconds; an existing one gets its time to live renewed. */
    private static final String SEED_FENCING_COUNTER = """
            if redis.call('exists', KEYS[1]) == 0 then
              local now = redis.call('time')
              redis.call('set', KEYS[1], now[1] .. string.rep('0', 6 - string.len(now[2])) .. now[2], 'px', ARGV[1])
            else
              redis.call('pexpire', KEYS[1], ARGV[1])
            end
            return 1
            """;

    private final RedissonClient redisson;
    private final LeaseMonitor monitor;

    /**
     * @param redisson the client the locks live in; its {@code lockWatchdogTimeout} also paces the check that
     * reports a watchdog lock lost while it is held
     */
    public RedissonLockProvider(RedissonClient redisson) {
        this.redisson = redisson;
        this.monitor = new LeaseMonitor(redisson.getConfig().getLockWatchdogTimeout());
    }

    @Override
    public LockHandle tryAcquire(String key, long waitNanos, long leaseNanos, boolean fenced) throws InterruptedException {
        long lease = (leaseNanos > 0) ? leaseNanos : WATCHDOG;
        // Redisson makes the thread part of the owner's identity; pinning it lets any thread name the same owner
        long owner = Thread.currentThread().getId();
        RLock lock;
        CompletableFuture<Long> acquisition;
        if (fenced) {
            RFencedLock fencedLock = redisson.getFencedLock(key);
            seedFencingCounter(fencedLock);
            lock = fencedLock;
            acquisition = fencedLock.tryLockAndGetTokenAsync(waitNanos, lease, TimeUnit.NANOSECONDS).toCompletableFuture();
        }
        else {
            lock = redisson.getLock(key);
            acquisition = lock.tryLockAsync(waitNanos, lease, TimeUnit.NANOSECONDS, owner).toCompletableFuture()
                    .thenApply(acquired -> acquired ? NOT_FENCED : null);
        }
        Long token;
        try {
            token = acquisition.get();
        }
        catch (InterruptedException ex) {
            // The blocking tryLock would give up here while its script may still take the lock (and arm the
            // watchdog) for a caller that is gone: a lock nobody releases, renewed forever. Give back whatever arrives.
            acquisition.whenComplete((acquired, failure) -> {
                if (failure == null && acquired != null) {
                    lock.unlockAsync(owner);
                }
            });
            throw ex;
        }
        catch (ExecutionException ex) {
            throw (ex.getCause() instanceof RuntimeException cause) ? cause : new IllegalStateException(ex.getCause());
        }
        if (token == null) {
            return null;
        }
        RedissonLockHandle handle = new RedissonLockHandle(lock, owner, token, (lease == WATCHDOG) ? monitor : null);
        if (lease == WATCHDOG) {
            monitor.watch(handle);
        }
        return handle;
    }

    /**
     * Redisson's fencing counter ({@code redisson_lock_token:{key}}) starts at 1 and never expires: with per-user keys
     * the counters pile up forever, and after Redis loses its data (restart without persistence, failover to a
     * replica that lagged) tokens start again below those storage has already seen, which then refuses every honest
     * writer. Seeding a missing counter with Redis's clock in microseconds keeps tokens rising across both, so the
     * counter may expire when unused: a later seed is still higher than any token handed out before (that would take
     * more than one acquisition per microsecond). Costs one round trip per fenced acquisition.
     */
    private void seedFencingCounter(RFencedLock lock) throws InterruptedException {
        String counter = RedissonObject.prefixName("redisson_lock_token", lock.getName());
        try {
            redisson.getScript(LongCodec.INSTANCE).evalAsync(counter, RScript.Mode.READ_WRITE, SEED_FENCING_COUNTER,
                    RScript.ReturnType.LONG, List.<Object>of(counter), FENCING_COUNTER_TTL.toMillis())
                    .toCompletableFuture().get();
        }
        catch (ExecutionException ex) {
            throw (ex.getCause() instanceof RuntimeException cause) ? cause : new IllegalStateException(ex.getCause());
        }
    }

    /** Stops the lease monitor; the client itself belongs to whoever created it. */
    @Override
    public void close() {
        monitor.close();
    }

    /** Watchdog locks whose loss would be reported right now (for tests and diagnostics). */
    int watchedLocks() {
        return monitor.watchedCount();
    }

    /** The redisson client behind the locks. */
    public RedissonClient getRedisson() {
        return redisson;
    }

    /** One held lock; mutable only in what the lease monitor tracks. */
    static final class RedissonLockHandle implements LockHandle {

        private final RLock lock;
        private final long owner;
        private final long fencingToken;
        private final LeaseMonitor monitor;
        private final AtomicBoolean lostReported = new AtomicBoolean();
        private volatile Consumer<String> lostCallback;
        private volatile String lostReason;
        volatile long confirmedAt;
        volatile boolean checking;

        RedissonLockHandle(RLock lock, long owner, long fencingToken, LeaseMonitor monitor) {
            this.lock = lock;
            this.owner = owner;
            this.fencingToken = fencingToken;
            this.monitor = monitor;
        }

        RLock lock() {
            return lock;
        }

        long owner() {
            return owner;
        }

        @Override
        public long fencingToken() {
            return fencingToken;
        }

        @Override
        public boolean release() {
            if (monitor != null) {
                monitor.unwatch(this);
            }
            try {
                // The unlock script checks the owner (client id + thread id): it never deletes another holder's lock,
                // and reports a lock we no longer own as IllegalMonitorStateException. join(), unlike unlock(), is not
                // cut short when the guarded code left the thread interrupted: we learn the real outcome.
                lock.unlockAsync(owner).toCompletableFuture().join();
                return true;
            }
            catch (CompletionException ex) {
                if (ex.getCause() instanceof IllegalMonitorStateException) {
                    return false;
                }
                throw (ex.getCause() instanceof RuntimeException cause) ? cause : ex;
            }
        }

        @Override
        public void whenLost(Consumer<String> callback) {
            lostCallback = callback;
            if (lostReason != null) {
                fireLost();
            }
        }

        @Override
        public boolean lostWhileHeld() {
            return lostReported.get();
        }

        void lost(String reason) {
            lostReason = reason;
            if (lostCallback != null) {
                fireLost();
            }
        }

        /** Either side may come second (loss found, callback registered): whichever does fires, once. */
        private void fireLost() {
            if (lostReported.compareAndSet(false, true)) {
                lostCallback.accept(lostReason);
            }
        }
    }
}

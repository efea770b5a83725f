package io.github.distlock.redisson;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/**
 * Locks on Redisson's {@link RLock} (a Redis hash owned by {@code <client id>:<thread id>}, reentrant, with
 * publish/subscribe wake-up of waiters), or {@link RFencedLock} when a fencing token is asked for.
 *
 * <p>A fresh lock object is taken per call: Redisson's lock objects keep per-acquisition state.
 */
public class RedissonLockProvider implements LockProvider {

    /** Redisson's lease value for "no fixed lease: renew by watchdog". */
    private static final long WATCHDOG = -1;

    private static final Long NOT_FENCED = -1L;

    private final RedissonClient redisson;

    /**
     * @param redisson the client the locks live in
     */
    public RedissonLockProvider(RedissonClient redisson) {
        this.redisson = redisson;
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
        return (token != null) ? new RedissonLockHandle(lock, owner, token) : null;
    }

    /** The redisson client behind the locks. */
    public RedissonClient getRedisson() {
        return redisson;
    }

    /** @param threadId the acquiring thread, which Redisson made part of the owner's identity */
    private record RedissonLockHandle(RLock lock, long threadId, long fencingToken) implements LockHandle {

        @Override
        public boolean release() {
            try {
                // The unlock script checks the owner (client id + thread id): it never deletes another holder's lock,
                // and reports a lock we no longer own as IllegalMonitorStateException. join(), unlike unlock(), is not
                // cut short when the guarded code left the thread interrupted: we learn the real outcome.
                lock.unlockAsync(threadId).toCompletableFuture().join();
                return true;
            }
            catch (CompletionException ex) {
                if (ex.getCause() instanceof IllegalMonitorStateException) {
                    return false;
                }
                throw (ex.getCause() instanceof RuntimeException cause) ? cause : ex;
            }
        }
    }
}

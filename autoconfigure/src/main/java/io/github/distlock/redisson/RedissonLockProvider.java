package io.github.distlock.redisson;

import java.util.concurrent.CompletionException;
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
        if (fenced) {
            RFencedLock lock = redisson.getFencedLock(key);
            Long token = lock.tryLockAndGetToken(waitNanos, lease, TimeUnit.NANOSECONDS);
            return (token != null) ? new RedissonLockHandle(lock, Thread.currentThread().getId(), token) : null;
        }
        RLock lock = redisson.getLock(key);
        return lock.tryLock(waitNanos, lease, TimeUnit.NANOSECONDS)
                ? new RedissonLockHandle(lock, Thread.currentThread().getId(), -1) : null;
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

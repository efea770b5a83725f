package io.github.distlock.reliability;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/**
 * The change proposed for {@code io.github.distlock.redisson.RedissonLockProvider}, kept here to prove it against the
 * interrupt churn of {@link RenewalAfterReleaseTest}.
 *
 * <p>Redisson's blocking {@code tryLock} gives up on an interrupt, but the lock script it sent may still take the lock
 * and arm the watchdog for the interrupted thread: nobody ever releases that lock and the watchdog renews it until
 * the client shuts down (the family of Redisson #7272). Asking asynchronously keeps hold of the outcome, so an
 * interrupted caller can give back a lock that arrives after it stopped waiting.
 */
final class InterruptSafeRedissonLockProvider implements LockProvider {

    private static final long WATCHDOG = -1;

    private final RedissonClient redisson;

    InterruptSafeRedissonLockProvider(RedissonClient redisson) {
        this.redisson = redisson;
    }

    @Override
    public LockHandle tryAcquire(String key, long waitNanos, long leaseNanos, boolean fenced) throws InterruptedException {
        long lease = (leaseNanos > 0) ? leaseNanos : WATCHDOG;
        // the async calls take this thread as owner now, so the unlock below names the same owner from any thread
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
                    .thenApply(acquired -> acquired ? -1L : null);
        }
        Long token;
        try {
            token = acquisition.get();
        }
        catch (InterruptedException ex) {
            acquisition.whenComplete((acquired, failure) -> {
                if (failure == null && acquired != null) {
                    lock.unlockAsync(owner);
                }
            });
            throw ex;
        }
        catch (ExecutionException ex) {
            Throwable cause = ex.getCause();
            throw (cause instanceof RuntimeException runtime) ? runtime : new IllegalStateException(cause);
        }
        return (token != null) ? new Handle(lock, owner, token) : null;
    }

    private record Handle(RLock lock, long owner, long fencingToken) implements LockHandle {

        /**
         * An interrupt must not turn a release into "failed": the unlock script is sent either way, so wait for its
         * answer (bounded by the client's command timeout and retries) and keep the interrupt for the caller.
         */
        @Override
        public boolean release() {
            CompletableFuture<Void> unlock = lock.unlockAsync(owner).toCompletableFuture();
            boolean interrupted = false;
            try {
                while (true) {
                    try {
                        unlock.get();
                        return true;
                    }
                    catch (InterruptedException ex) {
                        interrupted = true;
                    }
                    catch (ExecutionException ex) {
                        if (ex.getCause() instanceof IllegalMonitorStateException) {
                            return false;
                        }
                        throw (ex.getCause() instanceof RuntimeException runtime) ? runtime
                                : new IllegalStateException(ex.getCause());
                    }
                }
            }
            finally {
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }
}

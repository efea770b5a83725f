package io.github.distlock.redisson;

import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.redisson.RedissonLock;
import org.redisson.client.codec.LongCodec;
import org.redisson.client.protocol.RedisCommands;
import org.redisson.command.CommandAsyncExecutor;

/**
 * Redisson's {@code RLock} with one more way in: a single try that answers the holder's time to live, so that
 * {@link RLockLines} can do the waiting. The hash, the script and the release are Redisson's; only the wait is ours.
 * Redisson's own wait is not used for {@code REENTRANT} because its lock channel listener both runs one waiting
 * listener and leaves a semaphore permit per unlock message: asynchronous waiters (every distlock acquisition waits
 * asynchronously, under an owner id of its own) later find those permits and try again for nothing — about one
 * wasted script per acquisition on a hot key.
 */
final class OwnedRLock extends RedissonLock {

    /**
     * Redisson's acquisition script, word for word ({@code RedissonLock.tryLockInnerAsync}, which is package-private):
     * the protocol every {@code RLock} of the key speaks. A test reads it in Redisson's class file, so that an upgrade
     * that changes it fails the build. KEYS[1] the lock; ARGV[1] lease ms, [2] owner field.
     * Returns nil when acquired, else the lock's time to live in ms.
     */
    static final String TRY_SCRIPT = "if ((redis.call('exists', KEYS[1]) == 0) "
            + "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
            + "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
            + "redis.call('pexpire', KEYS[1], ARGV[1]); "
            + "return nil; "
            + "end; "
            + "return redis.call('pttl', KEYS[1]);";

    OwnedRLock(CommandAsyncExecutor executor, String name) {
        super(executor, name);
    }

    /**
     * One try for {@code owner} with a lease of {@code leaseMillis}: {@code null} when acquired, else the holder's
     * time to live in ms ({@code -1}: none). As Redisson's own try: synced with the replicas on a replicated Redis
     * (a try no replica confirmed is undone and sent again, Redisson's retry count), never re-sent otherwise.
     */
    CompletableFuture<Long> tryOnce(long leaseMillis, long owner) {
        // As Redisson's try does once it has the lock: the lease a re-entrant release renews the hash with. Set before
        // the try rather than in a stage after its reply: this object is one acquisition's and nobody releases it
        // before the try has answered, so the value read is the same, and the reply completes the caller's future
        // with one stage less on the client's event loop.
        internalLockLeaseTime = leaseMillis;
        return getServiceManager().execute(() -> handleNoSync(owner, evalWriteSyncedNoRetryAsync(getRawName(),
                LongCodec.INSTANCE, RedisCommands.EVAL_LONG, TRY_SCRIPT, List.<Object>of(getRawName()), leaseMillis,
                getLockName(owner)))).toCompletableFuture();
    }
}

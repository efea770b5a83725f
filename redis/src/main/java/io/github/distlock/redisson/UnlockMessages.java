package io.github.distlock.redisson;

import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.redisson.RedissonObject;
import org.redisson.api.RLock;
import org.redisson.api.RScript;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.LongCodec;

/**
 * The messages Redisson's waiters listen for: the publish command its own scripts use, and the wake-up after a WRITE
 * release that Redisson's own release leaves out.
 */
final class UnlockMessages {

    /** Logged as the provider's: the category its users already configure. */
    private static final Log logger = LogFactory.getLog(RedissonLockProvider.class);

    /**
     * Sends Redisson's UNLOCK message on the read/write hash's channel (KEYS[2]) when the hash (KEYS[1]) is gone;
     * ARGV[1] is the publish command, ARGV[2] the message. Redisson's write-lock release wakes the waiters with its
     * READ_UNLOCK message only, which runs the listeners registered at that moment and stores nothing for the others:
     * an asynchronous taker whose attempt is on its way (it found the lock held just before the release) registers its
     * listener after the message and sleeps through a free lock for its whole wait or the lease it saw. UNLOCK also
     * leaves a permit that such a taker finds when it registers, so it tries again at once.
     */
    static final String WAKE_IF_FREE = """
            if redis.call('exists', KEYS[1]) == 0 then
              redis.call(ARGV[1], KEYS[2], ARGV[2])
              return 1
            end
            return 0
            """;

    private final RedissonClient redisson;

    UnlockMessages(RedissonClient redisson) {
        this.redisson = redisson;
    }

    /**
     * After a WRITE lock's release: wakes the takers of the read/write hash {@code lock} names if it is free (see
     * {@link #WAKE_IF_FREE}). Never fails: without the message a taker still gets the lock at the end of its wait.
     */
    CompletableFuture<Void> wakeAfterWriteRelease(RLock lock) {
        String name = lock.getName();
        try {
            return redisson.getScript(LongCodec.INSTANCE).<Long>evalAsync(name, RScript.Mode.READ_WRITE, WAKE_IF_FREE,
                    RScript.ReturnType.LONG, List.<Object>of(name, RedissonObject.prefixName("redisson_rwlock", name)),
                    publishCommand(), String.valueOf(org.redisson.pubsub.LockPubSub.UNLOCK_MESSAGE))
                    .toCompletableFuture().handle((woken, failure) -> {
                        if (failure != null) {
                            logger.debug("Could not wake the takers of '" + name + "' after its release", failure);
                        }
                        return null;
                    });
        }
        catch (RuntimeException shutDown) {
            return CompletableFuture.completedFuture(null);
        }
    }

    /**
     * The command Redisson's own scripts wake waiters with: {@code spublish} where it subscribes with sharded pub/sub
     * (Redis 7 cluster), else {@code publish}. Internal API: {@code publish} when it can't be read.
     */
    String publishCommand() {
        try {
            if (redisson instanceof org.redisson.Redisson client) {
                return client.getCommandExecutor().getConnectionManager().getSubscribeService().getPublishCommand();
            }
        }
        catch (RuntimeException | LinkageError ex) {
            logger.debug("Could not read Redisson's publish command; using PUBLISH", ex);
        }
        return "publish";
    }
}

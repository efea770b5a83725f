package io.github.distlock.redisson;

import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.redisson.api.RScript;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/**
 * Sends the hand-off lock's scripts ({@link HandoffScripts}) the way each must be sent: synced with the replicas on a
 * replicated Redis, and never re-sent by Redisson's retry where a second copy could take or release a lock for nobody.
 */
final class HandoffScriptRunner {

    /** Reported as the hand-off lock's: the category its operators know. */
    private static final Log logger = LogFactory.getLog(HandoffLocks.class);

    private final RedissonClient redisson;
    /**
     * Redisson's command executor when scripts must be confirmed by the replicas before they count (replicated Redis,
     * as Redisson's own locks are); {@code null} on a single server.
     */
    private final org.redisson.command.CommandAsyncExecutor synced;
    /**
     * Redisson's command executor on a single server, for the acquisition and release scripts: sent once, never
     * re-sent by Redisson's retry (see {@link #eval}); {@code null} when it cannot be reached.
     */
    private final org.redisson.command.CommandAsyncExecutor once;

    HandoffScriptRunner(RedissonClient redisson) {
        this.redisson = redisson;
        this.synced = syncedExecutor(redisson);
        this.once = (synced == null)
                ? commandExecutor(redisson, "FAIR acquisition and release scripts may be re-sent by Redisson's retry")
                : null;
    }

    /**
     * On a replicated Redis, Redisson's locks run their scripts "synced": a {@code WAIT} for the replicas before the
     * reply counts (and, with {@code checkLockSyncedSlaves}, the default, a failure when none confirmed), so that a failover cannot lose a lock its holder
     * was told it has. The hand-off lock's scripts do the same, through the same (internal) Redisson call; and a grant
     * reaches its grantee by a message published before that {@code WAIT}, so there a grantee confirms its grant with a
     * synced script before it takes it. Internal API: when it cannot be reached, plain scripts (logged).
     */
    private static org.redisson.command.CommandAsyncExecutor syncedExecutor(RedissonClient redisson) {
        org.redisson.config.Config config = redisson.getConfig();
        // cluster, sentinel, master/slave, replicated: every configuration that knows of replicas. Whatever
        // checkLockSyncedSlaves says, as for Redisson's locks: it only decides whether a WAIT nobody confirmed fails
        if (config.isSingleConfig()) {
            return null;
        }
        return commandExecutor(redisson, "FAIR locks on this replicated Redis are not confirmed by the replicas (a "
                + "failover may lose one)");
    }

    /** Redisson's (internal) command executor; {@code null}, logged with what that costs, when it cannot be reached. */
    private static org.redisson.command.CommandAsyncExecutor commandExecutor(RedissonClient redisson, String without) {
        try {
            if (redisson instanceof org.redisson.Redisson client) {
                return client.getCommandExecutor();
            }
        }
        catch (RuntimeException | LinkageError ex) {
            logger.warn("Could not reach Redisson's command executor: " + without, ex);
            return null;
        }
        logger.warn("Not a Redisson client (" + redisson.getClass().getName() + "): " + without);
        return null;
    }

    /**
     * Runs {@code script}: synced on a replicated Redis (see {@link #syncedExecutor}), else a plain cached script —
     * except the acquisition and release scripts, which Redisson must not re-send (as it does not re-send its own
     * unlock): a copy of an acquisition that timed out on one connection can still run after the retry took the lock
     * and its caller released it, and take the lock again for nobody; a re-sent release whose first copy ran answers
     * "not held", and the holder is told its lock was lost. Sent once, a failure is handled by the waiter (the next
     * poll; a give-back that buries it once the caller is done, see {@link HandoffWaiter#lateScript}) or by the release's
     * caller (an exception, and a give-back). The synced call never re-sends either.
     */
    <T> CompletableFuture<T> eval(String key, String script, RScript.ReturnType type, List<Object> keys,
            Object... args) {
        org.redisson.client.protocol.RedisCommand<?> command = (type == RScript.ReturnType.LIST)
                ? org.redisson.client.protocol.RedisCommands.EVAL_LIST
                : org.redisson.client.protocol.RedisCommands.EVAL_LONG;
        @SuppressWarnings("unchecked")
        org.redisson.client.protocol.RedisCommand<T> typed = (org.redisson.client.protocol.RedisCommand<T>) command;
        if (synced != null) {
            return synced.<T>syncedEvalNoRetry(key, StringCodec.INSTANCE, typed, script, keys, args)
                    .toCompletableFuture();
        }
        if (once != null && (script == HandoffScripts.ACQUIRE || script == HandoffScripts.RELEASE
                || script == HandoffScripts.BURY)) {
            return once.<T, T>evalWriteNoRetryAsync(key, StringCodec.INSTANCE, typed, script, keys, args)
                    .toCompletableFuture();
        }
        return redisson.getScript(StringCodec.INSTANCE).<T>evalAsync(key, RScript.Mode.READ_WRITE, script, type, keys,
                args).toCompletableFuture();
    }

    /** Whether grants must be confirmed by a synced script before they are handed out. */
    boolean synced() {
        return synced != null;
    }
}

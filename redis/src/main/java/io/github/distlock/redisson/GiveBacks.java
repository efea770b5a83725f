package io.github.distlock.redisson;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import io.github.distlock.spi.LockDurations;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * Gives back what an acquisition may hold when its caller can no longer be told: a script whose reply was lost may
 * have run, or run yet, and taken the lock for an owner that nobody will release. Only that owner can hold it, so a
 * give-back can free nothing else.
 */
final class GiveBacks {

    /** Logged as the provider's: the category its users already configure. */
    private static final Log logger = LogFactory.getLog(RedissonLockProvider.class);

    /** The provider's one thread, shared with deferred claims, polls and announcements. */
    private final ScheduledExecutorService giveBacks;

    GiveBacks(ScheduledExecutorService executor) {
        this.giveBacks = executor;
    }

    /**
     * Runs {@code unlock} (true: released, false: not held) until it releases or Redis has answered "not held" twice,
     * and at most for the lock's lease.
     */
    void giveBack(String name, java.util.function.Supplier<CompletableFuture<Boolean>> unlock, long leaseMillis) {
        long period = Math.max(50, Math.min(1000, leaseMillis / 10));
        long deadline = LockDurations.deadline(System.nanoTime(), TimeUnit.MILLISECONDS.toNanos(leaseMillis));
        giveBack(name, unlock, deadline, period, 0);
    }

    private void giveBack(String name, java.util.function.Supplier<CompletableFuture<Boolean>> unlock, long deadline,
            long period, int notHeldAnswers) {
        CompletableFuture<Boolean> attempt;
        try {
            attempt = unlock.get();
        }
        catch (RuntimeException ex) {
            // client shut down: the lock expires within its lease
            return;
        }
        attempt.whenComplete((released, failure) -> {
            if (failure == null && released) {
                logger.info("Gave back lock '" + name + "', taken for a call that had already failed or "
                        + "stopped waiting");
                return;
            }
            int answers = (failure == null) ? notHeldAnswers + 1 : notHeldAnswers;
            if (answers >= 2 || System.nanoTime() - deadline > 0) {
                return;
            }
            try {
                giveBacks.schedule(() -> giveBack(name, unlock, deadline, period, answers), period,
                        TimeUnit.MILLISECONDS);
            }
            catch (RuntimeException rejected) {
                // shutting down: the lock expires within its lease
            }
        });
    }
}

package io.github.distlock.actuate;

import java.time.Duration;

import io.github.distlock.LockActivity;
import io.github.distlock.spi.LockInspector;
import io.github.distlock.spi.LockProvider;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * Health of the lock backend: {@code UP} when it answers a ping within {@code distlock.health.timeout}, {@code DOWN}
 * when it does not (unreachable, stalled), {@code UNKNOWN} when it cannot be pinged (it does not implement
 * {@link LockInspector}). Details: the locks held and calls waiting here, and the lease losses of the last
 * {@code distlock.health.recent-lease-losses} (a loss means another caller may have run concurrently; alert on it).
 *
 * <p>Not a member of the readiness group unless added: every instance shares the backend, so a blip would take every
 * instance out of the load balancer at once, also for requests that take no lock; lock calls already fail fast on
 * their own ({@code LockBackendException}). The health check never blocks longer than its timeout, and each backend
 * keeps its pings in flight few however often health is asked (one; on JDBC up to four while some are stuck on dead
 * connections).
 */
public class DistlockHealthIndicator implements HealthIndicator {

    private final LockProvider provider;
    /** {@code null} when the application's own template keeps no calls in progress. */
    private final @Nullable LockActivity activity;
    private final RecentLeaseLosses leaseLosses;
    private final Duration timeout;

    /**
     * @param provider the backend to ping
     * @param activity the calls in progress whose held locks and waiting calls are counted, or {@code null} when the
     * template keeps none (then neither detail is shown)
     * @param leaseLosses the lease losses seen lately
     * @param timeout how long a ping may take before the backend counts as down
     */
    public DistlockHealthIndicator(LockProvider provider, @Nullable LockActivity activity, RecentLeaseLosses leaseLosses,
            Duration timeout) {
        this.provider = provider;
        this.activity = activity;
        this.leaseLosses = leaseLosses;
        this.timeout = timeout;
    }

    @Override
    public Health health() {
        Health.Builder health;
        if (provider instanceof LockInspector inspector) {
            health = inspector.ping(timeout) ? Health.up() : Health.down().withDetail("error",
                    "the lock backend did not answer within " + timeout.toMillis() + " ms");
        }
        else {
            health = Health.unknown().withDetail("error", "the lock backend cannot be pinged: "
                    + provider.getClass().getSimpleName() + " does not implement LockInspector");
        }
        health.withDetail("backend", provider.getClass().getSimpleName());
        if (activity != null) {
            health.withDetail("heldLocks", activity.heldLockCount());
            health.withDetail("waitingCalls", activity.waitingCallCount());
        }
        if (leaseLosses != null) {
            RecentLeaseLosses.Summary losses = leaseLosses.summary();
            health.withDetail("recentLeaseLosses", losses.count());
            health.withDetail("recentLeaseLossesWindow", leaseLosses.window().toString());
            if (losses.last() != null) {
                health.withDetail("lastLeaseLoss", losses.last().toString());
            }
        }
        return health.build();
    }
}

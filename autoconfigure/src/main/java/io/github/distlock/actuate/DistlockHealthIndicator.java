package io.github.distlock.actuate;

import java.time.Duration;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LockTemplate;
import io.github.distlock.spi.LockInspector;
import io.github.distlock.spi.LockProvider;
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
 * their own ({@code LockBackendException}). The health check never blocks longer than its timeout, and at most one
 * ping is in flight however often it is asked.
 */
public class DistlockHealthIndicator implements HealthIndicator {

    private final LockProvider provider;
    private final LockTemplate template;
    private final RecentLeaseLosses leaseLosses;
    private final Duration timeout;

    /**
     * @param provider the backend to ping
     * @param template whose held and waiting locks are counted (a {@link DefaultLockTemplate} keeps them)
     * @param leaseLosses the lease losses seen lately
     * @param timeout how long a ping may take before the backend counts as down
     */
    public DistlockHealthIndicator(LockProvider provider, LockTemplate template, RecentLeaseLosses leaseLosses,
            Duration timeout) {
        this.provider = provider;
        this.template = template;
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
        if (template instanceof DefaultLockTemplate defaultTemplate) {
            health.withDetail("heldLocks", defaultTemplate.heldLockCount());
            health.withDetail("waitingCalls", defaultTemplate.waitingCallCount());
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

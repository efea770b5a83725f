package io.github.distlock.test;

import java.util.HashMap;
import java.util.Map;

import org.jspecify.annotations.Nullable;

/**
 * The faults a test told an {@link InMemoryLockProvider} to inject, per key and for every key; consumed as the
 * acquisitions and releases they apply to arrive. A key's own fault is used before the every-key one. Kept apart from
 * the lock table (its own monitor): a fault is decided before the table is touched.
 */
final class InMemoryFaults {

    /** What is planned for one key, or for every key. */
    static final class Plan {

        int acquisitionFailures;
        int releaseFailures;
        long delayNanos;

        boolean idle() {
            return acquisitionFailures == 0 && releaseFailures == 0 && delayNanos == 0;
        }
    }

    /** What one acquisition meets: a delay before the table sees it ({@code 0}: none), then a failure or not. */
    record Acquisition(long delayNanos, @Nullable SimulatedBackendFailure failure) {

        static final Acquisition NONE = new Acquisition(0, null);
    }

    private final Map<String, Plan> perKey = new HashMap<>();
    private final Plan everyKey = new Plan();

    synchronized void change(@Nullable String key, java.util.function.Consumer<Plan> change) {
        Plan plan = (key != null) ? perKey.computeIfAbsent(key, ignored -> new Plan()) : everyKey;
        change.accept(plan);
        if (key != null && plan.idle()) {
            perKey.remove(key);
        }
    }

    /** Forgets the faults of {@code key}, or the every-key ones when {@code null}. */
    synchronized void reset(@Nullable String key) {
        if (key != null) {
            perKey.remove(key);
        }
        else {
            everyKey.acquisitionFailures = 0;
            everyKey.releaseFailures = 0;
            everyKey.delayNanos = 0;
        }
    }

    synchronized void resetAll() {
        perKey.clear();
        reset(null);
    }

    /** What an acquisition of {@code key} (the request's key, prefix included) meets; consumes a failure. */
    synchronized Acquisition acquisition(String key) {
        Plan own = perKey.get(key);
        long delay = (own != null && own.delayNanos > 0) ? own.delayNanos : everyKey.delayNanos;
        SimulatedBackendFailure failure = null;
        if (own != null && own.acquisitionFailures > 0) {
            failure = failure("acquisition", key, "onKey(\"" + key + "\").failNextAcquisitions",
                    --own.acquisitionFailures);
            forgetIfIdle(key, own);
        }
        else if (everyKey.acquisitionFailures > 0) {
            failure = failure("acquisition", key, "onEveryKey().failNextAcquisitions", --everyKey.acquisitionFailures);
        }
        return (delay == 0 && failure == null) ? Acquisition.NONE : new Acquisition(delay, failure);
    }

    /** The failure a release of {@code key} meets, or {@code null}; consumes it. */
    synchronized @Nullable SimulatedBackendFailure release(String key) {
        Plan own = perKey.get(key);
        if (own != null && own.releaseFailures > 0) {
            SimulatedBackendFailure failure = failure("release", key, "onKey(\"" + key + "\").failNextReleases",
                    --own.releaseFailures);
            forgetIfIdle(key, own);
            return failure;
        }
        if (everyKey.releaseFailures > 0) {
            return failure("release", key, "onEveryKey().failNextReleases", --everyKey.releaseFailures);
        }
        return null;
    }

    /** The faults still planned, for the provider's {@code toString}: {@code none}, or per key and for every key. */
    synchronized String describe() {
        StringBuilder text = new StringBuilder();
        perKey.forEach((key, plan) -> text.append(" '").append(key).append("': ").append(describe(plan)));
        if (!everyKey.idle()) {
            text.append(" every key: ").append(describe(everyKey));
        }
        return text.isEmpty() ? "none" : text.toString().trim();
    }

    private static String describe(Plan plan) {
        return "acquisitions to fail " + plan.acquisitionFailures + ", releases to fail " + plan.releaseFailures
                + ", acquisitions delayed by " + java.time.Duration.ofNanos(plan.delayNanos) + ";";
    }

    private void forgetIfIdle(String key, Plan plan) {
        if (plan.idle()) {
            perKey.remove(key);
        }
    }

    private static SimulatedBackendFailure failure(String what, String key, String toldBy, int left) {
        return new SimulatedBackendFailure("Simulated lock backend failure: the " + what + " of '" + key
                + "' failed as told by InMemoryLockProvider." + toldBy + " (" + left + " more to fail)");
    }
}

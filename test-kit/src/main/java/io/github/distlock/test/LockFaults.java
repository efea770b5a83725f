package io.github.distlock.test;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

/**
 * Faults an {@link InMemoryLockProvider} injects for one key ({@link InMemoryLockProvider#onKey}) or for every key
 * ({@link InMemoryLockProvider#onEveryKey}), so that a test can take an application through what a real backend does
 * to it: a lease lost while the code runs, a backend that can't be reached, a backend that answers late. Deterministic:
 * counted faults hit exactly the next acquisitions or releases, in the order they reach the provider. A key's own
 * faults apply before the every-key ones. They stay until used up or {@linkplain #reset() reset}; in a Spring test,
 * every fault of the context's providers is reset after each test method.
 *
 * <pre>{@code
 * @Autowired InMemoryLockProvider locks;
 *
 * locks.onKey("lock:order:7").failNextAcquisitions(1);               // the next placeOrder(7) meets an outage
 * locks.onEveryKey().delayAcquisitions(Duration.ofMillis(300));       // a slow backend
 * locks.onKey("lock:order:7").loseLease();                            // the lease of a running placeOrder(7) is gone
 * }</pre>
 *
 * <p>Keys are full keys, prefix included ({@code lock:order:7} for
 * {@code @DistributedLock(key = "'order:' + #id")} with the default prefix), as the template asks the provider for
 * them; a semaphore ({@code permits > 1}) is under its lock's key.
 */
public final class LockFaults {

    private final InMemoryLockProvider provider;
    private final InMemoryFaults faults;
    /** {@code null} for every key. */
    private final @Nullable String key;

    LockFaults(InMemoryLockProvider provider, InMemoryFaults faults, @Nullable String key) {
        this.provider = provider;
        this.faults = faults;
        this.key = key;
    }

    /**
     * The next {@code times} acquisitions fail as when the backend can't be reached: the caller gets a
     * {@link io.github.distlock.LockBackendException} caused by a {@link SimulatedBackendFailure} (never "not
     * acquired": no skip, no fallback), listeners {@code onNotAcquired} with that failure, and the lock is not
     * taken. Replaces the count given before; {@code 0} fails none.
     *
     * @return these faults, to chain another
     * @throws IllegalArgumentException when {@code times} is negative
     */
    public LockFaults failNextAcquisitions(int times) {
        checkTimes("failNextAcquisitions", times);
        faults.change(key, plan -> plan.acquisitionFailures = times);
        return this;
    }

    /**
     * The next {@code times} releases fail as when the backend can't be reached: the release answers with a
     * {@link SimulatedBackendFailure} (the template logs it and tells listeners {@code onReleaseFailed}; the guarded
     * call's own result stands), and the lock stays held until it expires by itself, as it does in a real backend: a
     * fixed lease at its end, a watchdog lock one watchdog timeout later ({@code distlock.watchdog-timeout}, or the
     * provider's). Replaces the count given before; {@code 0} fails none.
     *
     * @return these faults, to chain another
     * @throws IllegalArgumentException when {@code times} is negative
     */
    public LockFaults failNextReleases(int times) {
        checkTimes("failNextReleases", times);
        faults.change(key, plan -> plan.releaseFailures = times);
        return this;
    }

    /**
     * Every acquisition from now on reaches the locks {@code delay} late, out of its caller's wait, as through a slow
     * network: a caller that waits longer gets the lock (or waits for it) {@code delay} later; a caller whose wait is
     * shorter than {@code delay} gets "not acquired" when its wait ends (a
     * {@link io.github.distlock.LockAcquisitionException}, or the skip or fallback the call asks for), without the
     * lock having been taken (a failure due for it is used up all the same); a single try (wait 0) gets its answer
     * after {@code delay}. {@link Duration#ZERO} ends the delay (a key's zero leaves it to the every-key delay).
     *
     * @return these faults, to chain another
     * @throws IllegalArgumentException when {@code delay} is null or negative
     */
    public LockFaults delayAcquisitions(Duration delay) {
        if (delay == null || delay.isNegative()) {
            throw new IllegalArgumentException(where() + ".delayAcquisitions(delay): the delay must be zero or "
                    + "positive, was " + delay);
        }
        long nanos = io.github.distlock.spi.LockDurations.toNanos(delay);
        faults.change(key, plan -> plan.delayNanos = nanos);
        return this;
    }

    /**
     * Takes the lease of every lock held now (of this key, or of every key) away from its holder, as a backend does
     * that lost it (a failover, a renewal that failed, a session that expired): each holder's
     * {@link io.github.distlock.spi.LockHandle#whenLost} is told (and through it the template's listeners,
     * {@code onLeaseLost}), its release answers "no longer mine", a nested call on the key inside the running code is
     * refused, and the next waiter gets the lock. The code under the lock keeps running, as with a real loss.
     *
     * @return how many holders lost their lease
     * @throws IllegalStateException when no lock is held (a key given without its prefix is a common cause): the
     * message lists what is held
     */
    public int loseLease() {
        int lost = provider.loseLeases(key);
        if (lost == 0) {
            String of = (key != null) ? "of '" + key + "' " : "";
            throw new IllegalStateException(where() + ".loseLease(): no lock " + of + "is held now, so there is no "
                    + "lease to lose; held: " + provider.lockedKeys() + " (keys include distlock.key-prefix)");
        }
        return lost;
    }

    /**
     * Removes the faults given here: this key's, or the every-key ones (a key's own stay; all of them:
     * {@link InMemoryLockProvider#resetFaults()}).
     */
    public void reset() {
        faults.reset(key);
    }

    private void checkTimes(String method, int times) {
        if (times < 0) {
            throw new IllegalArgumentException(where() + "." + method + "(times): times must be zero or more, was "
                    + times);
        }
    }

    private String where() {
        return (key != null) ? "onKey(\"" + key + "\")" : "onEveryKey()";
    }

    @Override
    public String toString() {
        return "LockFaults[" + ((key != null) ? key : "every key") + "]";
    }
}

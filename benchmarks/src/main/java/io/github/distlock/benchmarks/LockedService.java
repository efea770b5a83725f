package io.github.distlock.benchmarks;

import io.github.distlock.DistributedLock;

/**
 * Methods with the settings the raw-Redisson cases use, so each annotated case has a like-for-like raw twin. The
 * bodies are empty on purpose: the benchmark measures the lock cycle, not the work.
 */
public class LockedService {

    /** Wait 0 (one try), watchdog lease: Redisson's {@code tryLock(0, -1, ...)}. */
    @DistributedLock(key = "'bench:' + #id", waitTime = 0, leaseTime = DistributedLock.WATCHDOG)
    public int tryOnceWatchdog(String id) {
        return 1;
    }

    /** Wait 0 (one try), fixed 30 s lease: {@code tryLock(0, 30000, ...)}. */
    @DistributedLock(key = "'bench:' + #id", waitTime = 0, leaseTime = LockCycles.FIXED_LEASE_MS)
    public int tryOnceFixed(String id) {
        return 1;
    }

    /** Wait up to 30 s, watchdog lease: the contended case. */
    @DistributedLock(key = "'bench:' + #id", waitTime = LockCycles.WAIT_MS, leaseTime = DistributedLock.WATCHDOG)
    public int waitWatchdog(String id) {
        return 1;
    }

    /** Wait up to 30 s, fixed 30 s lease: the contended case. */
    @DistributedLock(key = "'bench:' + #id", waitTime = LockCycles.WAIT_MS, leaseTime = LockCycles.FIXED_LEASE_MS)
    public int waitFixed(String id) {
        return 1;
    }

    /** Wait up to 30 s, watchdog lease, running {@code body} under the lock: the hand-off measurement. */
    @DistributedLock(key = "'bench:' + #id", waitTime = LockCycles.WAIT_MS, leaseTime = DistributedLock.WATCHDOG)
    public void waitWatchdogRun(String id, Runnable body) {
        body.run();
    }
}

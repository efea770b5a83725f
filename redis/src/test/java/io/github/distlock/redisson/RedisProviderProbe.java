package io.github.distlock.redisson;

/** What tests of other packages may ask a {@link RedissonLockProvider} about its waiters. */
public final class RedisProviderProbe {

    private RedisProviderProbe() {
    }

    /** This provider's {@code REENTRANT} callers waiting for {@code key} that a release would wake. */
    public static int reentrantWaiters(RedissonLockProvider provider, String key) {
        return provider.rlockLines().waiting(key);
    }
}

package io.github.distlock.redisson;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.RedisServerExtension;
import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import static org.awaitility.Awaitility.await;

/**
 * Three providers on a redis-server of the class's own, each with a client of its own (another "instance": a client id
 * of its own), a watchdog timeout of {@value #WATCHDOG_MILLIS} ms (so 1 s grants, entry refreshes every 333 ms), and
 * a look at Redis from outside.
 */
abstract class HandoffTestBase {

    static final long WATCHDOG_MILLIS = 3_000;

    static final long GRANT_MILLIS = WATCHDOG_MILLIS / 3;

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private final List<RedissonClient> clients = new ArrayList<>();
    private final List<RedissonLockProvider> providers = new ArrayList<>();
    private final List<RedisTestProxy> proxies = new ArrayList<>();

    RedissonLockProvider a;
    RedissonLockProvider b;
    RedissonLockProvider c;

    @BeforeEach
    void startProviders() {
        RespClient.callOnce(redis.port(), "FLUSHALL");
        a = provider();
        b = provider();
        c = provider();
    }

    @AfterEach
    void stopProviders() {
        // the proxies first: a provider whose commands are held would retry its give-backs until it is closed
        proxies.forEach(RedisTestProxy::close);
        providers.forEach(RedissonLockProvider::close);
        clients.forEach(RedissonClient::shutdown);
    }

    private RedissonLockProvider provider() {
        return provider(redis.uri());
    }

    /** Another provider, whose client reaches Redis through {@code proxy} (stopped after the test). */
    RedissonLockProvider providerThrough(RedisTestProxy proxy) {
        proxies.add(proxy);
        return provider(proxy.uri());
    }

    private RedissonLockProvider provider(String address) {
        Config config = new Config();
        config.setLockWatchdogTimeout(WATCHDOG_MILLIS);
        config.useSingleServer().setAddress(address).setTimeout(10_000);
        RedissonClient client = Redisson.create(config);
        clients.add(client);
        RedissonLockProvider provider = new RedissonLockProvider(client);
        providers.add(provider);
        return provider;
    }

    static LockRequest fair(String key, Duration wait, Duration lease) {
        return new LockRequest(key, wait.toNanos(), lease.toNanos(), false, LockType.FAIR, LockOwner.next());
    }

    static Object redis(String... command) {
        return RespClient.callOnce(redis.port(), command);
    }

    static long pttl(String key) {
        return (Long) redis("PTTL", key);
    }

    static void awaitQueued(String key, int count) {
        await().atMost(Duration.ofSeconds(5)).until(() -> (Long) redis("HLEN", "distlock_waiters:{" + key + "}") == count);
    }

    /** How often Redis has run {@code command} since it started (INFO commandstats; commands inside scripts count). */
    static long calls(String command) {
        String stats = (String) redis("INFO", "commandstats");
        java.util.regex.Matcher calls = java.util.regex.Pattern.compile("cmdstat_" + command + ":calls=(\\d+)")
                .matcher(stats);
        return calls.find() ? Long.parseLong(calls.group(1)) : 0;
    }
}

package io.github.distlock.redisson;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
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
import org.redisson.config.SingleServerConfig;

import static org.assertj.core.api.Assertions.assertThat;
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
        return providerThrough(proxy, server -> { });
    }

    /** As {@link #providerThrough(RedisTestProxy)}; {@code tune} adjusts its client's configuration. */
    RedissonLockProvider providerThrough(RedisTestProxy proxy, Consumer<SingleServerConfig> tune) {
        proxies.add(proxy);
        return provider(proxy.uri(), tune);
    }

    private RedissonLockProvider provider(String address) {
        return provider(address, server -> { });
    }

    private RedissonLockProvider provider(String address, Consumer<SingleServerConfig> tune) {
        Config config = new Config();
        config.setLockWatchdogTimeout(WATCHDOG_MILLIS);
        tune.accept(config.useSingleServer().setAddress(address).setTimeout(10_000));
        RedissonClient client = Redisson.create(config);
        clients.add(client);
        RedissonLockProvider provider = new RedissonLockProvider(client);
        providers.add(provider);
        return provider;
    }

    /**
     * Loads every script a fenced FAIR acquisition and its release send, so that none goes as EVALSHA, NOSCRIPT, EVAL
     * while the test holds commands.
     */
    static void warmUp(RedissonLockProvider provider) {
        LockHandle warm = provider.acquire(new LockRequest("warm", 0, 0, true, LockType.FAIR, LockOwner.next())).join();
        assertThat(warm.release()).isTrue();
    }

    /**
     * Lets a held acquisition script through and waits until Redis has carried it out (its first command, the
     * tombstone check, is an EXISTS: counted).
     */
    static void carryOut(RedisTestProxy.Hold held, String what) {
        long checks = calls("exists");
        held.letThrough();
        await(what + " carried out").atMost(Duration.ofSeconds(2)).until(() -> calls("exists") > checks);
    }

    /** Another caller (provider c) takes {@code key} within a grant or two: nothing holds it for nobody. */
    void assertTheNextCallerTakes(String key) throws Exception {
        LockHandle next = c.acquire(fair(key, Duration.ofSeconds(5), Duration.ZERO)).get(10, TimeUnit.SECONDS);
        assertThat(next).as("the next caller, while lock %s (pttl %s, hash %s) lives on", key, redis("PTTL", key),
                redis("HGETALL", key)).isNotNull();
        assertThat(next.release()).isTrue();
    }

    /** A grant of 'k' to a waiter whose poll is held on a cut connection (see {@link #stalledPollThenGranted}). */
    record StalledPoll(RedisTestProxy.Hold poll, LockHandle granted) {
    }

    /**
     * A waiter (60 s lease, of a provider through a proxy with a 500 ms response timeout and no retries) queued behind
     * a holder of 'k'; one of its polls is held on its way to Redis and its connection cut (the poll fails, and may
     * still be carried out when let through); the waiter polls on, and the holder's release grants it the lock.
     */
    StalledPoll stalledPollThenGranted() throws Exception {
        RedisTestProxy proxy = RedisTestProxy.start(redis.port());
        RedissonLockProvider slow = providerThrough(proxy, server -> server.setTimeout(500).setRetryAttempts(0));
        warmUp(slow);
        LockHandle holder = a.acquire(fair("k", Duration.ZERO, Duration.ZERO)).join();
        LockRequest request = fair("k", Duration.ofSeconds(30), Duration.ofSeconds(60));
        String field = slow.clientId() + ":" + request.owner().id();
        CompletableFuture<LockHandle> waiter = slow.acquire(request);
        awaitQueued("k", 1);
        RedisTestProxy.Hold poll = proxy.holdAndCut(field);
        assertThat(poll.held.await(5, TimeUnit.SECONDS)).as("a poll held").isTrue();
        // the poll fails, the waiter polls on over other connections and stays queued
        await().during(Duration.ofMillis(1_200)).atMost(Duration.ofSeconds(3))
                .until(() -> !waiter.isDone() && (Long) redis("HEXISTS", "distlock_waiters:{k}", field) == 1L);
        assertThat(holder.release()).isTrue();
        LockHandle granted = waiter.get(5, TimeUnit.SECONDS);
        assertThat(granted).as("the grant").isNotNull();
        return new StalledPoll(poll, granted);
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

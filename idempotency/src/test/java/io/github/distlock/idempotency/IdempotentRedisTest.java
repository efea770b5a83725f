package io.github.distlock.idempotency;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LockContext;
import io.github.distlock.LockTemplate;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * {@link Idempotent} on a real redis-server, through a Spring Boot application context as an application has it
 * (its auto-configurations, its Jackson {@link JsonMapper}). Every test uses keys of its own.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class IdempotentRedisTest {

    /** The lock of a holder that dies is gone this long after its last renewal. */
    private static final long WATCHDOG_MILLIS = 1500;

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private ConfigurableApplicationContext context;
    private Payments payments;
    private RedissonClient redisson;
    private IdempotencyTemplate template;

    @BeforeAll
    void start() {
        context = new SpringApplicationBuilder(TestApplication.class).web(WebApplicationType.NONE)
                .properties("redis.uri=" + redis.uri(), "spring.main.banner-mode=off").run();
        payments = context.getBean(Payments.class);
        redisson = context.getBean(RedissonClient.class);
        template = context.getBean(IdempotencyTemplate.class);
    }

    @AfterAll
    void stop() {
        if (context != null) {
            context.close();
        }
    }

    @Test
    void aDuplicateTenSecondsAfterSuccessGetsTheSameResultWithoutRunning() {
        String id = id();
        Receipt first = payments.pay(id, 100);
        String lockKey = "lock:idempotent:pay:" + id;
        String markKey = "lock:idempotent-mark:pay:" + id;

        // ten seconds in which the lock stays released and the mark stays: the duplicate below is a later call
        Instant finished = Instant.now();
        await().during(Duration.ofSeconds(10)).atMost(Duration.ofSeconds(12)).pollInterval(Duration.ofMillis(500))
                .until(() -> !exists(lockKey) && exists(markKey));
        assertThat(Duration.between(finished, Instant.now())).isGreaterThanOrEqualTo(Duration.ofSeconds(10));

        Receipt duplicate = payments.pay(id, 100);
        assertThat(duplicate).isEqualTo(first);
        assertThat(payments.runs(id)).as("runs of the method").isEqualTo(1);
        // the mark carries the result, as JSON written by the application's mapper
        assertThat(redisson.<String>getBucket(markKey, StringCodec.INSTANCE).get())
                .contains("\"outcome\":\"RETURNED\"").contains(first.nonce().toString());
    }

    @Test
    void concurrentDuplicatesWaitForTheRunningCallAndGetItsResult() throws Exception {
        String id = id();
        CountDownLatch gate = payments.block(id);
        ExecutorService pool = Executors.newFixedThreadPool(6);
        try {
            Future<Receipt> first = pool.submit(() -> payments.pay(id, 7));
            payments.awaitEntered(id);
            List<Future<Receipt>> duplicates = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                duplicates.add(pool.submit(() -> payments.pay(id, 7)));
            }
            // they wait while the first runs: none returns, none runs the method
            await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2))
                    .until(() -> duplicates.stream().noneMatch(Future::isDone) && payments.runs(id) == 1);
            gate.countDown();
            Receipt result = first.get(10, TimeUnit.SECONDS);
            for (Future<Receipt> duplicate : duplicates) {
                assertThat(duplicate.get(10, TimeUnit.SECONDS)).isEqualTo(result);
            }
            assertThat(payments.runs(id)).isEqualTo(1);
        }
        finally {
            gate.countDown();
            pool.shutdownNow();
        }
    }

    @Test
    void aConcurrentDuplicateIsRefusedAtOnceWithRefuseAndGetsTheResultLater() throws Exception {
        String id = id();
        Receipt result = whileTheFirstCallRuns(id, () -> payments.payRefusing(id), () ->
                assertThatThrownBy(() -> payments.payRefusing(id)).isInstanceOf(RequestInProgressException.class)
                        .hasMessage("A call with idempotency key 'refuse:" + id + "' is still running; this duplicate "
                                + "was refused. Retry later for its result.")
                        .extracting(ex -> ((RequestInProgressException) ex).getKey()).isEqualTo("refuse:" + id));
        assertThat(payments.payRefusing(id)).isEqualTo(result);
        assertThat(payments.runs(id)).isEqualTo(1);
    }

    @Test
    void aDuplicateWaitingLongerThanItsWaitTimeGetsRequestInProgress() throws Exception {
        String id = id();
        whileTheFirstCallRuns(id, () -> payments.payShortWait(id), () ->
                assertThatThrownBy(() -> payments.payShortWait(id)).isInstanceOf(RequestInProgressException.class)
                        .hasMessage("A call with idempotency key 'short:" + id + "' is still running after waiting "
                                + "300 ms for it. Retry later for its result."));
        assertThat(payments.runs(id)).isEqualTo(1);
    }

    /** Runs {@code first} on another thread, held inside the method while {@code meanwhile} runs; its result. */
    private Receipt whileTheFirstCallRuns(String id, java.util.concurrent.Callable<Receipt> first, Runnable meanwhile)
            throws Exception {
        CountDownLatch gate = payments.block(id);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<Receipt> running = pool.submit(first);
            payments.awaitEntered(id);
            meanwhile.run();
            gate.countDown();
            return running.get(10, TimeUnit.SECONDS);
        }
        finally {
            gate.countDown();
            pool.shutdownNow();
        }
    }

    @Test
    void afterTheMarkExpiresTheCallRunsAgain() {
        String id = id();
        String markKey = "lock:idempotent-mark:ttl:" + id;
        Receipt first = payments.payShortTtl(id);
        long ttl = redisson.getBucket(markKey, StringCodec.INSTANCE).remainTimeToLive();
        assertThat(ttl).as("PTTL of the mark").isPositive().isLessThanOrEqualTo(1500);
        assertThat(payments.payShortTtl(id)).as("within the ttl").isEqualTo(first);

        await().atMost(Duration.ofSeconds(5)).until(() -> !exists(markKey));
        Receipt again = payments.payShortTtl(id);
        assertThat(again).isNotEqualTo(first);
        assertThat(payments.runs(id)).isEqualTo(2);
        assertThat(exists(markKey)).as("a new mark").isTrue();
    }

    @Test
    void aFailedFirstCallStoresNoMarkAndTheRetryRuns() {
        String id = id();
        assertThatThrownBy(() -> payments.charge(id, "crash")).isInstanceOf(IllegalStateException.class)
                .hasMessage("crashed: " + id);
        assertThat(exists("lock:idempotent-mark:charge:" + id)).as("mark after a failure").isFalse();

        Receipt retry = payments.charge(id, "ok");
        assertThat(payments.runs(id)).isEqualTo(2);
        assertThat(payments.charge(id, "ok")).isEqualTo(retry);
        assertThat(payments.runs(id)).isEqualTo(2);
    }

    @Test
    void aFailureOfAStoredTypeIsFinal() {
        String id = id();
        assertThatThrownBy(() -> payments.charge(id, "declined")).isInstanceOf(DeclinedException.class);
        assertThatThrownBy(() -> payments.charge(id, "ok")).isInstanceOf(DuplicateRequestException.class)
                .hasMessage("A call with idempotency key 'charge:" + id + "' was processed and failed with "
                        + DeclinedException.class.getName() + ": declined: " + id)
                .satisfies(ex -> {
                    assertThat(((DuplicateRequestException) ex).getKey()).isEqualTo("charge:" + id);
                    assertThat(((DuplicateRequestException) ex).getFirstFailure())
                            .isEqualTo(DeclinedException.class.getName());
                });
        assertThat(payments.runs(id)).isEqualTo(1);
    }

    @Test
    void aGenericResultIsReplayedAsTheDeclaredGenericType() {
        String id = id();
        List<Receipt> first = payments.batch(id, 3);
        List<Receipt> replayed = payments.batch(id, 3);
        assertThat(replayed).isEqualTo(first).allSatisfy(receipt -> assertThat(receipt).isInstanceOf(Receipt.class));
        assertThat(payments.runs(id)).isEqualTo(1);
    }

    @Test
    void aVoidMethodRunsOnce() {
        String id = id();
        payments.notifyOnce(id);
        payments.notifyOnce(id);
        assertThat(payments.runs(id)).isEqualTo(1);
    }

    @Test
    void aResultJsonCannotReadBackRunsOnceAndDuplicatesGetDuplicateRequest() {
        String id = id();
        assertThat(payments.open(id)).isEqualTo(new PlainHandle(id));
        assertThatThrownBy(() -> payments.open(id)).isInstanceOf(DuplicateRequestException.class)
                .hasMessage("A call with idempotency key 'handle:" + id + "' was processed, but its result ("
                        + PlainHandle.class.getName() + ") cannot be stored as " + Handle.class.getName()
                        + " through JSON")
                .extracting(ex -> ((DuplicateRequestException) ex).getKey()).isEqualTo("handle:" + id);
        assertThat(payments.runs(id)).isEqualTo(1);
    }

    @Test
    void theSameKeyWithAnotherFingerprintIsRefused() {
        String id = id();
        Receipt first = payments.withFingerprint(id, 5);
        assertThat(payments.withFingerprint(id, 5)).isEqualTo(first);
        assertThatThrownBy(() -> payments.withFingerprint(id, 6)).isInstanceOf(IdempotencyKeyReusedException.class)
                .hasMessage("Idempotency key 'fp:" + id + "' was used before for a different request (its "
                        + "fingerprint differs); use a new key for a new request");
        assertThat(payments.runs(id)).isEqualTo(1);
    }

    /**
     * A holder that dies mid-call (its Redis client shut down: no more renewals, no mark) leaves no state a
     * duplicate waits on forever: the lock expires within the watchdog timeout and the duplicate runs.
     */
    @Test
    void aDuplicateOfACallWhoseHolderDiedRunsOnceTheDeadLockExpires() throws Exception {
        String id = id();
        RedissonClient dyingClient = client();
        IdempotencyTemplate dying = new IdempotencyTemplate(new DefaultLockTemplate(new RedissonLockProvider(
                dyingClient), "lock:", Duration.ZERO, null, List.of()), new RedissonIdempotencyStore(dyingClient),
                context.getBean(JsonMapper.class), Duration.ofSeconds(10));
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch never = new CountDownLatch(1);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            pool.submit(() -> dying.execute("pay:" + id, Duration.ofMinutes(1), Receipt.class, () -> {
                entered.countDown();
                never.await();
                return null;
            }));
            assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
            dyingClient.shutdown();
            long start = System.nanoTime();
            Receipt receipt = payments.pay(id, 9);
            assertThat(receipt.id()).isEqualTo(id);
            assertThat(payments.runs(id)).isEqualTo(1);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).as("waited for the dead lock")
                    .isLessThan(Duration.ofMillis(WATCHDOG_MILLIS + 5000));
        }
        finally {
            never.countDown();
            pool.shutdownNow();
            dyingClient.shutdown();
        }
    }

    /** Redis lost the mark (here: deleted behind its back): the duplicate runs again, as documented. */
    @Test
    void aMarkRedisLostLetsTheDuplicateRunAgain() {
        String id = id();
        payments.pay(id, 1);
        assertThat(redisson.getBucket("lock:idempotent-mark:pay:" + id).delete()).isTrue();
        payments.pay(id, 1);
        assertThat(payments.runs(id)).isEqualTo(2);
        // and IdempotencyTemplate.forget is the deliberate way
        assertThat(template.forget("pay:" + id)).isTrue();
        payments.pay(id, 1);
        assertThat(payments.runs(id)).isEqualTo(3);
    }

    /**
     * A pooled thread carries nothing from one call to the next: no lock left held (LockContext), a duplicate on the
     * same thread is replayed rather than re-entering anything, and a failure there leaves the key free.
     */
    @Test
    void theNextCallOnTheSamePooledThreadSeesNothingOfThePreviousOne() throws Exception {
        String id = id();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Receipt first = pool.submit(() -> payments.pay(id, 3)).get(10, TimeUnit.SECONDS);
            assertThat(pool.submit(LockContext::heldKeys).get()).isEmpty();
            assertThat(pool.submit(() -> payments.pay(id, 3)).get(10, TimeUnit.SECONDS)).isEqualTo(first);
            assertThat(payments.runs(id)).isEqualTo(1);

            assertThatThrownBy(() -> pool.submit(() -> payments.charge(id, "crash")).get(10, TimeUnit.SECONDS))
                    .hasCauseInstanceOf(IllegalStateException.class);
            assertThat(pool.submit(LockContext::heldKeys).get()).isEmpty();
            assertThat(exists("lock:idempotent:charge:" + id)).as("lock after the failure").isFalse();
            // the key on the same thread right after the failure: runs, and sees only its own lock while it runs
            assertThat(pool.submit(() -> payments.charge(id, "ok")).get(10, TimeUnit.SECONDS).id()).isEqualTo(id);
            assertThat(payments.heldKeysSeen(id)).containsExactly("lock:idempotent:charge:" + id);
        }
        finally {
            pool.shutdownNow();
        }
    }

    @Test
    void theContextUsesTheApplicationsJsonMapper() {
        assertThat(context.getBeansOfType(JsonMapper.class)).hasSize(1);
        assertThat(context.getBean(IdempotencyStore.class)).isInstanceOf(RedissonIdempotencyStore.class);
    }

    private boolean exists(String key) {
        return redisson.getKeys().countExists(key) == 1;
    }

    private static String id() {
        return UUID.randomUUID().toString();
    }

    private static RedissonClient client() {
        Config config = new Config();
        config.useSingleServer().setAddress(redis.uri());
        config.setLockWatchdogTimeout(WATCHDOG_MILLIS);
        return Redisson.create(config);
    }

    /** What a payment returns: the nonce differs on every run, so equal receipts mean a replay. */
    record Receipt(String id, int amount, UUID nonce, Instant at) {
    }

    interface Handle {
    }

    record PlainHandle(String id) implements Handle {
    }

    static class DeclinedException extends RuntimeException {
        DeclinedException(String message) {
            super(message);
        }
    }

    /** The bean under test. Runs are counted per id. */
    static class Payments {

        private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        private final Map<String, CountDownLatch> gates = new ConcurrentHashMap<>();
        private final Map<String, CountDownLatch> entered = new ConcurrentHashMap<>();
        private final Map<String, List<String>> heldKeys = new ConcurrentHashMap<>();

        @Idempotent(key = "'pay:' + #id", ttl = "60s", waitTime = "10s")
        public Receipt pay(String id, int amount) {
            return run(id, amount);
        }

        @Idempotent(key = "'refuse:' + #id", whileRunning = WhileRunning.REFUSE)
        public Receipt payRefusing(String id) {
            return run(id, 1);
        }

        @Idempotent(key = "'short:' + #id", waitTime = "300ms")
        public Receipt payShortWait(String id) {
            return run(id, 1);
        }

        @Idempotent(key = "'ttl:' + #id", ttl = "1500ms")
        public Receipt payShortTtl(String id) {
            return run(id, 1);
        }

        @Idempotent(key = "'charge:' + #id", storeFailureFor = DeclinedException.class)
        public Receipt charge(String id, String outcome) {
            heldKeys.put(id, LockContext.heldKeys());
            Receipt receipt = run(id, 1);
            return switch (outcome) {
                case "declined" -> throw new DeclinedException("declined: " + id);
                case "crash" -> throw new IllegalStateException("crashed: " + id);
                default -> receipt;
            };
        }

        @Idempotent(key = "'list:' + #id")
        public List<Receipt> batch(String id, int size) {
            List<Receipt> receipts = new ArrayList<>();
            receipts.add(run(id, 0));
            for (int i = 1; i < size; i++) {
                receipts.add(new Receipt(id, i, UUID.randomUUID(), Instant.now()));
            }
            return receipts;
        }

        @Idempotent(key = "'void:' + #id")
        public void notifyOnce(String id) {
            run(id, 0);
        }

        @Idempotent(key = "'handle:' + #id")
        public Handle open(String id) {
            run(id, 0);
            return new PlainHandle(id);
        }

        @Idempotent(key = "'fp:' + #id", fingerprint = "#amount")
        public Receipt withFingerprint(String id, int amount) {
            return run(id, amount);
        }

        private Receipt run(String id, int amount) {
            runs.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
            entered.computeIfAbsent(id, k -> new CountDownLatch(1)).countDown();
            CountDownLatch gate = gates.get(id);
            try {
                if (gate != null && !gate.await(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("gate of " + id + " never opened");
                }
            }
            catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", ex);
            }
            return new Receipt(id, amount, UUID.randomUUID(), Instant.now());
        }

        int runs(String id) {
            AtomicInteger count = runs.get(id);
            return (count != null) ? count.get() : 0;
        }

        /** Calls for {@code id} block until the returned latch opens. */
        CountDownLatch block(String id) {
            CountDownLatch gate = new CountDownLatch(1);
            gates.put(id, gate);
            return gate;
        }

        void awaitEntered(String id) throws InterruptedException {
            assertThat(entered.computeIfAbsent(id, k -> new CountDownLatch(1)).await(10, TimeUnit.SECONDS)).isTrue();
        }

        List<String> heldKeysSeen(String id) {
            return heldKeys.get(id);
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class TestApplication {

        @Bean(destroyMethod = "shutdown")
        RedissonClient redissonClient() {
            return client();
        }

        @Bean
        Payments payments() {
            return new Payments();
        }
    }
}

package io.github.distlock.idempotency;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.springframework.core.ResolvableType;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Every duplicate of an {@link IdempotencyTemplate} call gets the first call's answer exactly, or is refused: never a
 * result made up from another call's mark, a number of another type, a second run on the caller's own thread, or a
 * mark overwritten by a holder that lost its lock. On a real redis-server (no Spring context: the template on
 * {@link DefaultLockTemplate} and {@link RedissonLockProvider}, as {@code IdempotencyAutoConfiguration} builds it).
 * Each test states the property the template must keep.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class IdempotentDuplicatesGetTheFirstAnswerExactlyOrAreRefusedTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private RedissonClient redisson;
    private RedissonLockProvider provider;
    private IdempotencyTemplate template;

    @BeforeAll
    void start() {
        Config config = new Config();
        config.useSingleServer().setAddress(redis.uri());
        config.setLockWatchdogTimeout(1500);
        redisson = Redisson.create(config);
        provider = new RedissonLockProvider(redisson);
        template = new IdempotencyTemplate(new DefaultLockTemplate(provider, "lock:", Duration.ZERO, null, List.of()),
                new RedissonIdempotencyStore(redisson), JsonMapper.shared(), Duration.ofSeconds(10));
    }

    @AfterAll
    void stop() {
        if (provider != null) {
            provider.close();
        }
        if (redisson != null) {
            redisson.shutdown();
        }
    }

    record Order(String id, long amount) {
    }

    record Refund(String refundId, String reason) {
    }

    /**
     * Two call sites that happen to use the same key text (two @Idempotent methods keyed by '#request.id', say) with
     * different result types: the second is "replayed" from the first's mark as a Refund built from an Order's JSON
     * (every field null), without running and without an error. Expected: it runs, or it is refused with an
     * IdempotencyException; never a silently made-up result.
     */
    @Test
    void aMarkOfAnotherResultTypeIsNotReplayedAsAMadeUpObject() {
        String key = "shared:" + UUID.randomUUID();
        template.execute(key, Duration.ofMinutes(1), Order.class, () -> new Order("o-1", 100));
        AtomicBoolean ran = new AtomicBoolean();
        Object outcome;
        try {
            outcome = template.execute(key, Duration.ofMinutes(1), Refund.class, () -> {
                ran.set(true);
                return new Refund("r-1", "damaged");
            });
        }
        catch (IdempotencyException ex) {
            outcome = ex;
        }
        assertThat(ran.get() || outcome instanceof IdempotencyException)
                .as("the Refund call got %s without running", outcome).isTrue();
    }

    /**
     * A declared type the JSON round trip reads back as another class: the first caller got a Long, every duplicate
     * gets an Integer (not equal to it: {@code Long.valueOf(7).equals(Integer.valueOf(7))} is false). The check at
     * store time only asks "can it be read?", not "is it the same?".
     */
    @Test
    void aNumberResultIsReplayedAsTheSameNumber() {
        String key = "number:" + UUID.randomUUID();
        Number first = template.execute(key, Duration.ofMinutes(1), Number.class, () -> 7L);
        assertThat(first).isEqualTo(7L);
        // JSON cannot say "a Long": the duplicate is refused, naming why, rather than handed an Integer 7
        assertThatThrownBy(() -> template.execute(key, Duration.ofMinutes(1), Number.class, () -> -1L))
                .isInstanceOf(DuplicateRequestException.class)
                .hasMessageContaining("cannot be stored as java.lang.Number through JSON");
    }

    /** The same with a generic map: the first caller's Long value comes back as an Integer. */
    @Test
    void aMapOfObjectsIsReplayedEqualToTheFirstResult() {
        String key = "map:" + UUID.randomUUID();
        ResolvableType type = ResolvableType.forClassWithGenerics(Map.class, String.class, Object.class);
        IdempotencyOptions options = IdempotencyOptions.ttl(Duration.ofMinutes(1));
        Map<String, Object> first = template.execute(key, options, type, () -> Map.of("count", 7L));
        assertThat(first).containsEntry("count", 7L);
        assertThatThrownBy(() -> template.execute(key, options, type, () -> Map.of("count", -1L)))
                .isInstanceOf(DuplicateRequestException.class)
                .hasMessageContaining("cannot be stored as java.util.Map<java.lang.String,java.lang.Object> through JSON");
        // what can be replayed exactly still is
        String other = "map-of-strings:" + UUID.randomUUID();
        ResolvableType strings = ResolvableType.forClassWithGenerics(Map.class, String.class, String.class);
        Map<String, String> once = template.execute(other, options, strings, () -> Map.of("state", "paid"));
        assertThat(template.<Map<String, String>, RuntimeException>execute(other, options, strings,
                () -> Map.of("state", "never"))).isEqualTo(once);
    }

    /**
     * The same request whose fingerprint is a HashMap built another way (another capacity: the same entries iterate in
     * another order) is taken for another request: an honest retry gets IdempotencyKeyReusedException (the sample's
     * 422). The fingerprint is the SHA-256 of the JSON as written, and Jackson writes a map in iteration order.
     */
    @Test
    void anEqualFingerprintIsNotTakenForAnotherRequest() {
        String key = "fingerprint:" + UUID.randomUUID();
        Map<String, Integer> request = new HashMap<>();
        request.put("q", 1);
        request.put("a", 2);
        Map<String, Integer> retried = new HashMap<>(64);
        retried.put("q", 1);
        retried.put("a", 2);
        assertThat(retried).isEqualTo(request);
        assertThat(List.copyOf(retried.keySet())).as("precondition: another iteration order")
                .isNotEqualTo(List.copyOf(request.keySet()));
        IdempotencyOptions options = IdempotencyOptions.ttl(Duration.ofMinutes(1));
        String first = template.execute(key, options.withFingerprint(request), ResolvableType.forClass(String.class),
                () -> "done");
        Object retry;
        try {
            retry = template.execute(key, options.withFingerprint(retried), ResolvableType.forClass(String.class),
                    () -> "ran again");
        }
        catch (IdempotencyKeyReusedException ex) {
            retry = ex;
        }
        assertThat(retry).isEqualTo(first);
    }

    /**
     * A duplicate on the thread of the running first call (the code calls, synchronously, something that retries the
     * same key: an in-process webhook, a retry loop inside the callback) re-enters the REENTRANT lock, reads no mark
     * (none is written yet) and runs the code a second time, nested in the first. Expected: it is treated as a
     * duplicate of a running call (RequestInProgressException: waiting would wait for itself), never run.
     */
    @Test
    void aDuplicateOnTheRunningCallsOwnThreadDoesNotRunAgain() {
        String key = "nested:" + UUID.randomUUID();
        AtomicInteger runs = new AtomicInteger();
        template.execute(key, Duration.ofMinutes(1), String.class, () -> {
            runs.incrementAndGet();
            try {
                return template.execute(key, Duration.ofMinutes(1), String.class, () -> {
                    runs.incrementAndGet();
                    return "inner";
                });
            }
            catch (RequestInProgressException expected) {
                return "refused";
            }
        });
        assertThat(runs.get()).as("runs of the code for one key").isEqualTo(1);
    }

    /**
     * A holder A whose lock is lost mid-call (here deleted behind its back: what a pause longer than the watchdog
     * timeout does), a duplicate B that then takes the lock and runs. Both run (documented: a unique constraint must
     * catch that), but then A, which no longer holds the lock, overwrites B's mark with a plain SET: B's caller got
     * "B", every later duplicate gets "A" — two different answers to one key for the whole ttl. The invariant the
     * class comment states ("only a holder of the key's lock writes the key's mark") is not checked at the write.
     * Expected: A, no longer the holder, does not overwrite the mark of the call that ran after it (B's stays).
     */
    @Test
    void aHolderThatLostItsLockDoesNotOverwriteTheMarkOfTheCallThatRanAfterIt() throws Exception {
        String key = "lost:" + UUID.randomUUID();
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<String> a = pool.submit(() -> template.execute(key, Duration.ofMinutes(1), String.class, () -> {
                entered.countDown();
                finish.await();
                return "A";
            }));
            assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(redisson.getKeys().delete("lock:idempotent:" + key)).as("A's lock, lost").isEqualTo(1);
            String b = template.execute(key, Duration.ofMinutes(1), String.class, () -> "B");
            assertThat(b).isEqualTo("B");
            finish.countDown();
            assertThat(a.get(10, TimeUnit.SECONDS)).isEqualTo("A");
            await().atMost(Duration.ofSeconds(5)).until(() -> redisson.getKeys().countExists("lock:idempotent:" + key) == 0);
            String later = template.execute(key, Duration.ofMinutes(1), String.class, () -> "C");
            assertThat(later).as("a later duplicate: the mark of the call that held the lock last").isEqualTo(b);
        }
        finally {
            finish.countDown();
            pool.shutdownNow();
        }
    }
}

package io.github.distlock.types;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockTemplate;
import io.github.distlock.it.LockTestApplication;
import io.github.distlock.it.RecordingLockListener;
import io.github.distlock.it.RedisIntegrationTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Methods whose work ends after they return hold their lock until it really ends: CompletableFuture, Mono, Flux.
 * Watchdog timeout 1 s, so "no renewal left behind" is checked over several renewal periods.
 */
@SpringBootTest(classes = {LockTestApplication.class, AsyncLockTest.Config.class},
        properties = "distlock.watchdog-timeout=1s")
class AsyncLockTest extends RedisIntegrationTest {

    @Autowired
    Jobs jobs;

    @Autowired
    LockTemplate locks;

    @Autowired
    RecordingLockListener recorder;

    @AfterEach
    void clearEvents() {
        recorder.events.clear();
    }

    @Test
    void futureHoldsTheLockUntilItCompletesOnAnotherThread() throws Exception {
        long start = System.nanoTime();
        CompletableFuture<String> first = jobs.completesAfter("cf", 500);

        // the method has returned; its future has not: the lock is still held and a second caller is refused
        assertThat(redisCommands.exists("lock:job:cf")).isOne();
        assertThatThrownBy(() -> jobs.completesAfter("cf", 0).join())
                .isInstanceOf(CompletionException.class).hasCauseInstanceOf(LockAcquisitionException.class);

        assertThat(first.get(5, TimeUnit.SECONDS)).isEqualTo("done cf");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(500));
        assertThat(redisCommands.exists("lock:job:cf")).as("released when the future completed").isZero();
        assertThat(recorder.events).containsSubsequence("acquired:lock:job:cf", "released:lock:job:cf");
    }

    @Test
    void monoHoldsTheLockFromSubscriptionUntilItCompletes() {
        Mono<String> mono = jobs.monoAfter("m", 500);
        assertThat(redisCommands.exists("lock:job:m")).as("nothing is locked before subscription").isZero();

        CompletableFuture<String> result = mono.toFuture();
        await().atMost(Duration.ofSeconds(10)).until(() -> redisCommands.exists("lock:job:m") == 1);
        assertThatThrownBy(() -> jobs.monoAfter("m", 0).block(Duration.ofSeconds(5)))
                .isInstanceOf(LockAcquisitionException.class);

        assertThat(result.join()).isEqualTo("done m");
        assertThat(redisCommands.exists("lock:job:m")).isZero();
    }

    @Test
    void fluxHoldsTheLockUntilItsLastElement() {
        List<Long> seen = new ArrayList<>();
        List<Long> elements = jobs.flux("f").doOnNext(n -> seen.add(redisCommands.exists("lock:job:f")))
                .collectList().block(Duration.ofSeconds(5));

        assertThat(elements).containsExactly(0L, 1L, 2L);
        assertThat(seen).as("lock held while each element was emitted").containsOnly(1L);
        assertThat(redisCommands.exists("lock:job:f")).isZero();
    }

    /**
     * Cancelling a returned future does not stop the work it stands for (CompletableFuture.cancel never does), so the
     * lock stays until that work completes; cancelling a Mono's subscription stops it, and releases.
     */
    @Test
    void cancellationReleasesWhenTheWorkEnds() {
        CompletableFuture<String> future = jobs.completesAfter("cancel", 1_500);
        assertThat(redisCommands.exists("lock:job:cancel")).isOne();
        future.cancel(true);
        await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(1))
                .until(() -> redisCommands.exists("lock:job:cancel") == 1);
        await().atMost(Duration.ofSeconds(5)).until(() -> redisCommands.exists("lock:job:cancel") == 0);

        Disposable subscription = jobs.monoAfter("cancel-mono", 10_000).subscribe();
        await().atMost(Duration.ofSeconds(10)).until(() -> redisCommands.exists("lock:job:cancel-mono") == 1);
        subscription.dispose();
        await().atMost(Duration.ofSeconds(3)).until(() -> redisCommands.exists("lock:job:cancel-mono") == 0);
    }

    /** A thousand calls ending every way there is, concurrently: afterwards no lock and no renewal is left. */
    @Test
    void thousandRandomCompletionsFailuresAndCancellationsLeaveNothingBehind() throws Exception {
        List<CompletableFuture<?>> calls = new ArrayList<>();
        AtomicInteger refused = new AtomicInteger();
        for (int i = 0; i < 1000; i++) {
            String key = "r" + (i % 20);
            int outcome = ThreadLocalRandom.current().nextInt(6);
            int delay = ThreadLocalRandom.current().nextInt(20);
            CompletableFuture<?> call = switch (outcome) {
                case 0 -> jobs.completesAfter(key, delay);
                case 1 -> jobs.failsAfter(key, delay);
                case 2 -> {
                    CompletableFuture<String> f = jobs.completesAfter(key, 1_000);
                    CompletableFuture.delayedExecutor(delay, TimeUnit.MILLISECONDS).execute(() -> f.cancel(true));
                    yield f;
                }
                case 3 -> jobs.monoAfter(key, delay).toFuture();
                case 4 -> jobs.monoFailsAfter(key, delay).toFuture();
                default -> {
                    CompletableFuture<String> f = jobs.monoAfter(key, 1_000).toFuture();
                    CompletableFuture.delayedExecutor(delay, TimeUnit.MILLISECONDS).execute(() -> f.cancel(true));
                    yield f;
                }
            };
            calls.add(call.handle((value, failure) -> {
                if (failure != null && (failure instanceof LockAcquisitionException
                        || failure.getCause() instanceof LockAcquisitionException)) {
                    refused.incrementAndGet();
                }
                return null;
            }));
        }
        CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);

        await().atMost(Duration.ofSeconds(5)).until(() -> redisCommands.keys("lock:*").isEmpty());
        // three watchdog timeouts later: a renewal left running would have brought a key back or kept one alive
        await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(5))
                .until(() -> redisCommands.keys("lock:*").isEmpty());
        assertThat(refused.get()).as("some calls met a held lock").isPositive();
    }

    public static class Jobs {

        private static Executor after(long millis) {
            return CompletableFuture.delayedExecutor(millis, TimeUnit.MILLISECONDS);
        }

        @DistributedLock(key = "'job:' + #id")
        public CompletableFuture<String> completesAfter(String id, long millis) {
            return CompletableFuture.supplyAsync(() -> "done " + id, after(millis));
        }

        @DistributedLock(key = "'job:' + #id")
        public CompletableFuture<String> failsAfter(String id, long millis) {
            return CompletableFuture.supplyAsync(() -> {
                throw new IllegalStateException("failed " + id);
            }, after(millis));
        }

        @DistributedLock(key = "'job:' + #id")
        public Mono<String> monoAfter(String id, long millis) {
            return Mono.just("done " + id).delayElement(Duration.ofMillis(millis));
        }

        @DistributedLock(key = "'job:' + #id")
        public Mono<String> monoFailsAfter(String id, long millis) {
            return Mono.delay(Duration.ofMillis(millis)).then(Mono.error(new IllegalStateException("failed " + id)));
        }

        @DistributedLock(key = "'job:' + #id")
        public Flux<Long> flux(String id) {
            return Flux.interval(Duration.ofMillis(50)).take(3);
        }
    }

    @TestConfiguration
    static class Config {

        @Bean
        Jobs jobs() {
            return new Jobs();
        }

        @Bean
        RecordingLockListener recordingLockListener() {
            return new RecordingLockListener();
        }
    }
}

package io.github.distlock.types;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.it.HeldElsewhere;
import io.github.distlock.it.LockTestApplication;
import io.github.distlock.it.RedisIntegrationTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import reactor.core.publisher.Mono;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What a call does when its lock is taken (skip, fallback), and a minimum hold for scheduled jobs.
 */
@SpringBootTest(classes = {LockTestApplication.class, SkipFallbackAndHoldTest.Config.class})
class SkipFallbackAndHoldTest extends RedisIntegrationTest {

    @Autowired
    Job job;

    @Autowired
    LockTemplate locks;

    private HeldElsewhere holder;

    @AfterEach
    void releaseHolder() {
        if (holder != null) {
            holder.releaseLater();
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> redisCommands.keys("lock:*").isEmpty());
    }

    private void holdElsewhere(String key) {
        holder = HeldElsewhere.hold(locks, key);
    }

    @Test
    void skippedCallsReturnNothingOfTheirTypeWithoutRunning() throws Exception {
        holdElsewhere("report");
        int before = job.runs().get();

        job.skipVoid();
        assertThat(job.skipString()).isNull();
        assertThat(job.skipOptional()).isEmpty();
        assertThat(job.skipFuture().get(1, TimeUnit.SECONDS)).isNull();
        assertThat(job.skipMono().block(Duration.ofSeconds(5))).isNull();
        assertThat(job.runs().get()).as("no skipped method ran").isEqualTo(before);
        // once free, the same methods run
        holder.releaseLater();
        await().atMost(Duration.ofSeconds(5)).until(() -> redisCommands.exists("lock:report") == 0);
        assertThat(job.skipString()).isEqualTo("ran");
    }

    @Test
    void fallbackRunsInsteadWithTheSameArgumentsAndTheException() throws Exception {
        holdElsewhere("quote:7");

        assertThat(job.quote(7)).isEqualTo("cached quote 7");
        assertThat(job.quoteWithReason(7)).startsWith("busy 7: Could not acquire lock 'lock:quote:7'");
        assertThat(job.quoteLater(7).get(1, TimeUnit.SECONDS)).isEqualTo("later 7");
        assertThat(job.quoteMono(7).block(Duration.ofSeconds(5))).isEqualTo("mono fallback 7");
    }

    /**
     * A 20 ms job with a 2 s minimum hold: another instance whose trigger fires 50 ms later is refused, one that fires
     * after the hold runs. The first caller returns while the lock is still held: the hold does not delay it.
     */
    @Test
    void minimumHoldKeepsAQuickJobFromRunningTwice() {
        LockOptions atLeast2s = LockOptions.waitFor(Duration.ZERO).withHoldAtLeast(Duration.ofSeconds(2));
        long start = System.nanoTime();
        assertThat(locks.tryRun("nightly", atLeast2s, () -> spin(20))).isTrue();
        assertThat(redisCommands.exists("lock:nightly")).as("returned before the release").isOne();

        spin(50);
        assertThat(locks.tryRun("nightly", atLeast2s, () -> { })).as("a second run 50 ms later").isFalse();

        await().atMost(Duration.ofSeconds(5)).until(() -> redisCommands.exists("lock:nightly") == 0);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofSeconds(2));
        assertThat(locks.tryRun("nightly", LockOptions.waitFor(Duration.ZERO), () -> { })).isTrue();
        // through the annotation, in the annotation's unit
        assertThat(job.nightly()).isEqualTo("ran");
        assertThat(redisCommands.exists("lock:nightly-annotated")).as("held on after the quick run").isOne();
    }

    private static void spin(long millis) {
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (System.nanoTime() < until) {
            Thread.onSpinWait();
        }
    }

    public static class Job {

        private final AtomicInteger runs = new AtomicInteger();

        public AtomicInteger runs() {
            return runs;
        }

        @DistributedLock(key = "'report'", skipIfLocked = true)
        public void skipVoid() {
            runs.incrementAndGet();
        }

        @DistributedLock(key = "'report'", skipIfLocked = true)
        public String skipString() {
            runs.incrementAndGet();
            return "ran";
        }

        @DistributedLock(key = "'report'", skipIfLocked = true)
        public Optional<String> skipOptional() {
            runs.incrementAndGet();
            return Optional.of("ran");
        }

        @DistributedLock(key = "'report'", skipIfLocked = true)
        public CompletableFuture<String> skipFuture() {
            runs.incrementAndGet();
            return CompletableFuture.completedFuture("ran");
        }

        @DistributedLock(key = "'report'", skipIfLocked = true)
        public Mono<String> skipMono() {
            return Mono.fromSupplier(() -> {
                runs.incrementAndGet();
                return "ran";
            });
        }

        @DistributedLock(key = "'quote:' + #id", fallbackMethod = "cachedQuote")
        public String quote(int id) {
            return "fresh quote " + id;
        }

        public String cachedQuote(int id) {
            return "cached quote " + id;
        }

        @DistributedLock(key = "'quote:' + #id", fallbackMethod = "busy")
        public String quoteWithReason(int id) {
            return "fresh quote " + id;
        }

        public String busy(int id, LockAcquisitionException reason) {
            return "busy " + id + ": " + reason.getMessage();
        }

        @DistributedLock(key = "'quote:' + #id", fallbackMethod = "later")
        public CompletableFuture<String> quoteLater(int id) {
            return CompletableFuture.completedFuture("now " + id);
        }

        public CompletableFuture<String> later(int id) {
            return CompletableFuture.completedFuture("later " + id);
        }

        @DistributedLock(key = "'quote:' + #id", fallbackMethod = "monoFallback")
        public Mono<String> quoteMono(int id) {
            return Mono.just("mono " + id);
        }

        public Mono<String> monoFallback(int id) {
            return Mono.just("mono fallback " + id);
        }

        @DistributedLock(key = "'nightly-annotated'", waitTime = 0, holdAtLeast = 2, timeUnit = TimeUnit.SECONDS)
        public String nightly() {
            return "ran";
        }
    }

    @TestConfiguration
    static class Config {

        @Bean
        Job job() {
            return new Job();
        }
    }
}

package io.github.distlock.it;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockBackendException;
import io.github.distlock.LockTemplate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Calls that time out while Redis stalls leave no lock behind and no lock to re-enter: the test stops the redis-server
 * process ({@code kill -STOP}) and lets it continue, so commands time out on the client while the server runs them
 * later. (A listener's Error during such a stall: {@link ListenerErrorsDoNotStopTheLeaseMonitorTest}.)
 */
@SpringBootTest(classes = {LockTestApplication.class, TimedOutCallsOnAStalledRedisLeaveNoLockBehindTest.Config.class},
        properties = {"distlock.watchdog-timeout=10s", "spring.data.redis.timeout=300ms"})
class TimedOutCallsOnAStalledRedisLeaveNoLockBehindTest extends RedisIntegrationTest {

    @Autowired
    LockTemplate locks;

    @Autowired
    RecordingLockListener recorder;

    /** One pooled thread, as a servlet container's worker thread that serves request after request. */
    private final ExecutorService worker = Executors.newSingleThreadExecutor();

    @AfterEach
    void cleanUp() {
        signal("CONT");
        worker.shutdownNow();
        recorder.events.clear();
    }

    /**
     * The acquisition times out on the client, its script runs when Redis answers again. The orphan must be given
     * back well within the watchdog timeout, and the next call on the same pooled thread must never re-enter it.
     */
    @Test
    void timedOutAcquisitionIsGivenBackAndNeverReenteredByTheNextCallOnTheSameThread() throws Exception {
        // a warm client: Redis has the lock script cached, so the late EVALSHA runs (a cold one fails with NOSCRIPT)
        assertThat(CompletableFuture.supplyAsync(() -> locks.execute("order:7", () -> "warm-up"), worker)
                .get(10, TimeUnit.SECONDS)).isEqualTo("warm-up");
        // the server stops, as in a long GC-like stall: the script waits in its socket and runs when it continues
        signal("STOP");
        CompletableFuture<String> first = CompletableFuture.supplyAsync(() -> locks.execute("order:7", () -> "first"), worker);
        try {
            assertThatThrownBy(() -> first.get(10, TimeUnit.SECONDS)).hasCauseInstanceOf(LockBackendException.class);
        }
        finally {
            signal("CONT");
        }

        // the next request served by the same thread, while the late script may have left its lock behind
        CompletableFuture<String> next = CompletableFuture.supplyAsync(() -> {
            try {
                return locks.execute("order:7", () -> "holders " + redisCommands.hgetall("lock:order:7").values());
            }
            catch (LockAcquisitionException refused) {
                return "refused";
            }
        }, worker);
        assertThat(next.get(10, TimeUnit.SECONDS)).as("a call that got the lock must be its only holder, once")
                .isIn("refused", "holders [1]");

        // given back, not left to expire after the 10 s watchdog timeout (or later, if re-entered)
        await().atMost(Duration.ofMillis(3000)).until(() -> redisCommands.exists("lock:order:7") == 0);
        assertThat(CompletableFuture.supplyAsync(() -> locks.execute("order:7", () -> "later"), worker)
                .get(10, TimeUnit.SECONDS)).isEqualTo("later");
    }

    /**
     * The release side: Redis stalls while the method runs, so the release times out and the lock stays behind.
     * The next call on the same pooled thread must not re-enter that lock (an owner per thread would let it: same
     * thread, same owner), and the lock must be released once Redis answers again, not left to expire.
     */
    @Test
    void lockWhoseReleaseTimedOutIsNeitherReenteredNorLeftBehind() throws Exception {
        CompletableFuture<String> first = CompletableFuture.supplyAsync(() -> locks.execute("order:8", () -> {
            signal("STOP");
            return "first";
        }), worker);
        try {
            assertThat(first.get(10, TimeUnit.SECONDS)).as("the method's own result stands").isEqualTo("first");
            assertThat(recorder.events).contains("releaseFailed:lock:order:8");
        }
        finally {
            signal("CONT");
        }

        CompletableFuture<String> next = CompletableFuture.supplyAsync(() -> {
            try {
                return locks.execute("order:8", () -> "holders " + redisCommands.hgetall("lock:order:8").values());
            }
            catch (LockAcquisitionException refused) {
                return "refused";
            }
        }, worker);
        assertThat(next.get(10, TimeUnit.SECONDS)).as("a call that got the lock must be its only holder, once")
                .isIn("refused", "holders [1]");
        await().atMost(Duration.ofMillis(3000)).until(() -> redisCommands.exists("lock:order:8") == 0);
    }

    /** Sends {@code signal} to the redis-server process of the running test class. */
    static void signal(String signal) {
        try {
            signalOrFail(signal);
        }
        catch (Exception ex) {
            throw new IllegalStateException(ex);
        }
    }

    private static void signalOrFail(String signal) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(redis.server().pid())).inheritIO().start();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).as("kill -" + signal).isTrue();
    }

    @TestConfiguration
    static class Config {

        @Bean
        RecordingLockListener recordingLockListener() {
            return new RecordingLockListener();
        }
    }

}

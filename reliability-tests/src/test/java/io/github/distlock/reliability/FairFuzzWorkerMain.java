package io.github.distlock.reliability;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

import io.github.distlock.LockTemplate;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * One worker JVM of {@link FairFuzzTest}: an application with the starter whose threads run cycles of a non-atomic
 * read-modify-write of a per-key counter in Redis ({@code GET}, increment here, {@code SET}) under a
 * {@link io.github.distlock.LockType#FAIR} lock of a randomly chosen key, with an "inside" marker that catches two
 * cycles of one key running at once, whichever JVMs they run in:
 * <ul>
 * <li>entering, a cycle {@code SET <prefix>inside:<k> <its token> NX}: failing means another cycle is inside;
 * <li>leaving, it {@code GETDEL}s the marker, which must still be its own token.
 * </ul>
 * Each overlap also increments {@code <prefix>overlaps} in Redis. Each pair of commands is pipelined (one round trip),
 * which keeps the read-modify-write non-atomic (the {@code SET} goes out after the {@code GET}'s answer came back).
 *
 * <p>Two phases, both started by a {@code GO} line on standard input after the worker printed {@code READY}: first a
 * control without any lock (prefix {@code fuzzctl:}), which must show overlaps and lost updates or the checks prove
 * nothing, then the locked phase (prefix {@code fuzz:}). At the end it prints {@code DONE <phase> <cycles per key,
 * comma-separated> <overlaps> <ms>} for each phase, and exits.
 *
 * <p>Arguments: redis port, worker id, keys, threads, locked cycles per thread, control cycles per thread.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class FairFuzzWorkerMain {

    private static final Duration WAIT = Duration.ofSeconds(60);

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        String worker = args[1];
        int keys = Integer.parseInt(args[2]);
        int threads = Integer.parseInt(args[3]);
        int cycles = Integer.parseInt(args[4]);
        int controlCycles = Integer.parseInt(args[5]);
        ConfigurableApplicationContext context = new SpringApplicationBuilder(FairFuzzWorkerMain.class)
                .web(WebApplicationType.NONE)
                .properties("spring.main.banner-mode=off", "logging.level.root=WARN",
                        "spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + port)
                .run();
        RedisClient client = RedisClient.create(RedisURI.builder().withHost("127.0.0.1").withPort(port)
                .withTimeout(Duration.ofSeconds(30)).build());
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            LockTemplate locks = context.getBean(LockTemplate.class);
            RedisAsyncCommands<String, String> redis = connection.async();
            System.out.println("READY");
            System.out.flush();
            String go = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
            if (!"GO".equals(go)) {
                throw new IllegalStateException("expected GO, got " + go);
            }
            if (controlCycles > 0) {
                runPhase("fuzzctl:", null, redis, worker, keys, threads, controlCycles);
            }
            runPhase("fuzz:", locks, redis, worker, keys, threads, cycles);
        }
        finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            context.close();
        }
        System.exit(0);
    }

    /** Runs one phase on all threads; {@code locks == null} runs the cycles without any lock (the control). */
    private static void runPhase(String prefix, LockTemplate locks, RedisAsyncCommands<String, String> redis,
            String worker, int keys, int threads, int cyclesPerThread) throws InterruptedException {
        AtomicLongArray perKey = new AtomicLongArray(keys);
        AtomicLong overlaps = new AtomicLong();
        List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
        CountDownLatch done = new CountDownLatch(threads);
        long start = System.nanoTime();
        List<Thread> running = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            String thread = worker + "-" + t;
            Thread runner = new Thread(() -> {
                try {
                    for (int c = 0; c < cyclesPerThread; c++) {
                        int k = ThreadLocalRandom.current().nextInt(keys);
                        String token = thread + "-" + c;
                        Runnable cycle = () -> cycle(redis, prefix, k, token, overlaps);
                        if (locks == null) {
                            cycle.run();
                        }
                        else {
                            locks.run(prefix + k, FairWaiters.fair(WAIT), cycle::run);
                        }
                        perKey.incrementAndGet(k);
                    }
                }
                catch (Throwable ex) {
                    failures.add(ex);
                    ex.printStackTrace(System.out);
                }
                finally {
                    done.countDown();
                }
            }, "fuzz-" + thread);
            runner.start();
            running.add(runner);
        }
        done.await();
        long ms = (System.nanoTime() - start) / 1_000_000;
        List<String> counts = new ArrayList<>();
        for (int k = 0; k < keys; k++) {
            counts.add(Long.toString(perKey.get(k)));
        }
        System.out.println("DONE " + prefix + " " + String.join(",", counts) + " " + overlaps.get() + " " + ms + " "
                + failures.size());
        System.out.flush();
    }

    /** One read-modify-write of the key's counter, with the overlap check around it. */
    private static void cycle(RedisAsyncCommands<String, String> redis, String prefix, int k, String token,
            AtomicLong overlaps) {
        String inside = prefix + "inside:" + k;
        String counter = prefix + "count:" + k;
        RedisFuture<String> entered = redis.set(inside, token, SetArgs.Builder.nx());
        RedisFuture<String> read = redis.get(counter);
        boolean alone = "OK".equals(get(entered));
        String value = get(read);
        long next = ((value == null) ? 0 : Long.parseLong(value)) + 1;
        if (!alone) {
            overlap(redis, prefix, overlaps);
            get(redis.set(counter, Long.toString(next)));
            return;
        }
        RedisFuture<String> written = redis.set(counter, Long.toString(next));
        RedisFuture<String> left = redis.getdel(inside);
        get(written);
        if (!token.equals(get(left))) {
            overlap(redis, prefix, overlaps);
        }
    }

    private static void overlap(RedisAsyncCommands<String, String> redis, String prefix, AtomicLong overlaps) {
        overlaps.incrementAndGet();
        get(redis.incr(prefix + "overlaps"));
    }

    private static <T> T get(RedisFuture<T> future) {
        try {
            return future.get(30, TimeUnit.SECONDS);
        }
        catch (Exception ex) {
            throw new IllegalStateException("Redis command failed", ex);
        }
    }
}

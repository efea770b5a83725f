package io.github.distlock.chaos;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockBackendException;
import io.github.distlock.LockContext;
import io.github.distlock.LockEvent;
import io.github.distlock.LockListener;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.redisson.autoconfigure.RedissonConfigCustomizer;
import org.redisson.config.BaseConfig;
import org.redisson.config.ClusterServersConfig;
import org.redisson.config.Config;
import org.redisson.config.SentinelServersConfig;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * One client JVM of a chaos run: an application on distlock (the backend its properties choose) whose threads run the
 * lock-set workload from a {@code GO} line on standard input (it prints {@code READY} when it can start: a spare
 * client waits there) until a {@code STOP} line. One operation: pick a key, take its lock (fenced
 * for keys named {@code f<n>}, not for {@code u<n>}), read the key's set from the {@link SetStore} (with the token when
 * fenced), pause a random 0 to {@code chaos.hold-max-ms} ms, write the set back with the operation's own element added,
 * release. Every step is appended to this client's history file and flushed at once, so a SIGKILL loses nothing that
 * happened before it (see {@link History} for the line format); times are {@code System.nanoTime()} in microseconds,
 * which on Linux is the system-wide monotonic clock, the same in every JVM of the machine.
 *
 * <p>Properties ({@code --name=value} arguments): {@code chaos.client}, {@code chaos.history}, {@code chaos.store-port},
 * {@code chaos.threads}, {@code chaos.keys} (per kind: fenced and unfenced), {@code chaos.hold-max-ms},
 * {@code chaos.wait-ms}, and for Redis behind proxies {@code chaos.nat} ({@code host:port=host:port,...}: the
 * addresses Redis announces mapped to this client's proxies). Everything else configures the application (backend,
 * servers, {@code distlock.watchdog-timeout}).
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class ChaosClientMain {

    private static volatile boolean stopping;

    private static PrintWriter history;

    public static void main(String[] args) throws Exception {
        ConfigurableApplicationContext context = new SpringApplicationBuilder(ChaosClientMain.class)
                .web(WebApplicationType.NONE)
                .properties("spring.main.banner-mode=off", "logging.level.root=WARN",
                        "logging.level.io.github.distlock=WARN")
                .run(args);
        Environment env = context.getEnvironment();
        String client = env.getRequiredProperty("chaos.client");
        int threads = env.getProperty("chaos.threads", Integer.class, 4);
        int keys = env.getProperty("chaos.keys", Integer.class, 3);
        int holdMaxMs = env.getProperty("chaos.hold-max-ms", Integer.class, 100);
        Duration wait = Duration.ofMillis(env.getProperty("chaos.wait-ms", Long.class, 10_000L));
        int storePort = env.getProperty("chaos.store-port", Integer.class);
        LockTemplate locks = context.getBean(LockTemplate.class);
        System.out.println("READY");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String go = in.readLine();
        if (!"GO".equals(go)) {
            // a spare that was never needed
            context.close();
            System.exit(0);
        }
        Thread stopper = new Thread(() -> awaitStop(in), "chaos-stop");
        stopper.setDaemon(true);
        stopper.start();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            String name = client + "-" + t;
            Thread worker = new Thread(() -> work(name, locks, storePort, keys, holdMaxMs, wait), "chaos-" + name);
            worker.start();
            workers.add(worker);
        }
        for (Thread worker : workers) {
            worker.join();
        }
        context.close();
        history.flush();
        System.out.println("STOPPED");
        System.out.flush();
        System.exit(0);
    }

    /** Records that the library told this client it lost the lock of a key. */
    @Bean
    LockListener chaosLeaseLossRecorder() {
        return new LockListener() {
            @Override
            public void onLeaseLost(LockEvent event) {
                record("LOST", "-", event.key(), Long.toString(now()));
            }
        };
    }

    /** Opens the history file before anything can be recorded. */
    @Bean
    Object chaosHistory(Environment env) throws IOException {
        Path file = Path.of(env.getRequiredProperty("chaos.history"));
        history = new PrintWriter(new BufferedWriter(new OutputStreamWriter(Files.newOutputStream(file,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND), StandardCharsets.UTF_8)), false);
        return file;
    }

    /** Routes Redisson to this client's proxies: Redis announces its servers' own addresses, not the proxies'. */
    @Bean
    RedissonConfigCustomizer chaosNatMap(Environment env) {
        Map<String, String> nat = new HashMap<>();
        String spec = env.getProperty("chaos.nat", "");
        for (String pair : spec.split(",")) {
            if (!pair.isBlank()) {
                String[] parts = pair.split("=");
                nat.put(parts[0], parts[1]);
            }
        }
        return new RedissonConfigCustomizer() {
            @Override
            public void customize(Config config) {
            }

            @Override
            public void customizeServer(BaseConfig<?> server) {
                if (server instanceof SentinelServersConfig sentinel) {
                    sentinel.setNatMap(nat);
                    // the sentinels' own list of sentinels names the servers, not the proxies: use the ones given
                    sentinel.setSentinelsDiscovery(false);
                    sentinel.setCheckSentinelsList(false);
                }
                else if (server instanceof ClusterServersConfig cluster) {
                    cluster.setNatMap(nat);
                }
                server.setRetryAttempts(1);
                server.setTimeout(1000);
            }
        };
    }

    static long now() {
        return System.nanoTime() / 1000;
    }

    static void record(String... fields) {
        synchronized (ChaosClientMain.class) {
            history.println(String.join(" ", fields));
            history.flush();
        }
    }

    private static void awaitStop(BufferedReader in) {
        try {
            String line;
            while ((line = in.readLine()) != null && !"STOP".equals(line.trim())) {
                // only STOP means something
            }
        }
        catch (IOException ex) {
            // the runner is gone: stop as well
        }
        stopping = true;
    }

    private static void work(String name, LockTemplate locks, int storePort, int keys, int holdMaxMs, Duration wait) {
        try (StoreConnection store = new StoreConnection(storePort)) {
            for (long seq = 0; !stopping; seq++) {
                ThreadLocalRandom random = ThreadLocalRandom.current();
                boolean fenced = random.nextBoolean();
                String key = (fenced ? "f" : "u") + random.nextInt(keys);
                String op = name + "-" + seq;
                LockOptions options = fenced ? LockOptions.waitFor(wait).withFencing() : LockOptions.waitFor(wait);
                record("INV", op, key, Long.toString(now()));
                try {
                    locks.run(key, options, () -> operation(store, op, key, fenced, holdMaxMs));
                    record("END", op, key, Long.toString(now()));
                }
                catch (LockAcquisitionException ex) {
                    record("FAIL", op, key, Long.toString(now()), "not-acquired");
                }
                catch (LockBackendException ex) {
                    record("FAIL", op, key, Long.toString(now()), "backend");
                }
                catch (RuntimeException ex) {
                    record("FAIL", op, key, Long.toString(now()), "other:" + ex.getClass().getSimpleName());
                }
            }
        }
    }

    private static void operation(StoreConnection store, String op, String key, boolean fenced, int holdMaxMs) {
        long token = fenced ? LockContext.fencingToken().orElseThrow(
                () -> new IllegalStateException("A fenced lock without a fencing token: " + key)) : -1;
        record("ACQ", op, key, Long.toString(now()), Long.toString(token));
        List<String> set = store.read(key, token);
        if (set == null) {
            record("CS", op, key, Long.toString(now()), "refused");
            return;
        }
        int hold = ThreadLocalRandom.current().nextInt(holdMaxMs + 1);
        if (hold > 0) {
            try {
                Thread.sleep(hold);
            }
            catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                record("CS", op, key, Long.toString(now()), "interrupted");
                return;
            }
        }
        List<String> next = new ArrayList<>(set);
        next.add(op);
        long seq = store.write(key, token, op, next);
        record("CS", op, key, Long.toString(now()), (seq < 0) ? "refused" : "ok", Long.toString(seq));
    }

    /** One thread's connection to the {@link SetStore}: requests and answers are lines. */
    static final class StoreConnection implements AutoCloseable {

        private final Socket socket;
        private final BufferedReader in;
        private final PrintWriter out;

        StoreConnection(int port) {
            try {
                socket = new Socket(InetAddress.getLoopbackAddress(), port);
                in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
                out = new PrintWriter(new OutputStreamWriter(socket.getOutputStream(), StandardCharsets.UTF_8), false);
            }
            catch (IOException ex) {
                throw new UncheckedIOException("Could not reach the set store on port " + port, ex);
            }
        }

        /** The key's set, or {@code null} when the store refused the token. */
        List<String> read(String key, long token) {
            String answer = call("R " + key + " " + token);
            if (answer.equals("X")) {
                return null;
            }
            String elements = answer.substring(1).trim();
            return elements.isEmpty() ? List.of() : Arrays.asList(elements.split(","));
        }

        /** The store's sequence number of the accepted write, or -1 when it refused the token. */
        long write(String key, long token, String op, List<String> set) {
            String answer = call("W " + key + " " + token + " " + op + " " + String.join(",", set));
            return answer.equals("X") ? -1 : Long.parseLong(answer.substring(3).trim());
        }

        private String call(String request) {
            out.println(request);
            out.flush();
            try {
                String answer = in.readLine();
                if (answer == null) {
                    throw new IllegalStateException("The set store closed the connection");
                }
                return answer;
            }
            catch (IOException ex) {
                throw new UncheckedIOException(ex);
            }
        }

        @Override
        public void close() {
            try {
                socket.close();
            }
            catch (IOException ex) {
                // closing
            }
        }
    }
}

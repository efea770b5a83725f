package io.github.distlock.reliability;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;

import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A lock holder in its own JVM, started by {@link HolderProcess}: a Spring Boot application with the starter takes one
 * lock, prints {@code HOLDING <epoch ms taken just before asking for the lock>} and then holds it until the process is
 * killed.
 *
 * <p>Arguments: redis port, lock key, lease in ms (0 = watchdog), watchdog timeout in ms, and optionally the
 * {@link LockType} (default {@code REENTRANT}) and the permits (default 1: a lock).
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class LockHolderMain {

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        String key = args[1];
        long leaseMs = Long.parseLong(args[2]);
        long watchdogMs = Long.parseLong(args[3]);
        LockType type = (args.length > 4) ? LockType.valueOf(args[4]) : LockType.REENTRANT;
        int permits = (args.length > 5) ? Integer.parseInt(args[5]) : 1;
        ConfigurableApplicationContext context = new SpringApplicationBuilder(LockHolderMain.class)
                .web(WebApplicationType.NONE)
                .properties("spring.main.banner-mode=off", "logging.level.root=WARN",
                        "spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + port,
                        "distlock.watchdog-timeout=" + watchdogMs + "ms")
                .run();
        LockTemplate locks = context.getBean(LockTemplate.class);
        LockOptions options = new LockOptions(Duration.ZERO,
                (leaseMs > 0) ? Duration.ofMillis(leaseMs) : LockOptions.WATCHDOG, false).withType(type)
                .withPermits(permits);
        long askedAt = System.currentTimeMillis();
        locks.run(key, options, () -> {
            System.out.println("HOLDING " + askedAt);
            System.out.flush();
            // held until SIGKILL: the point is a holder that never gets to release
            new CountDownLatch(1).await();
        });
    }
}

package io.github.distlock.jdbc;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;

/**
 * A lock holder in its own JVM, started by {@link HolderJvm}: takes one lock through a {@link JdbcLockProvider}, prints
 * {@code HOLDING <owner>} and holds it until the process is killed.
 *
 * <p>Arguments: JDBC URL, user, password, lock key, lease in ms (0 = watchdog), watchdog timeout in ms.
 */
public final class JdbcHolderMain {

    public static void main(String[] args) throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(args[0]);
        config.setUsername(args[1]);
        config.setPassword(args[2]);
        config.setMaximumPoolSize(2);
        HikariDataSource dataSource = new HikariDataSource(config);
        JdbcLockProvider provider = new JdbcLockProvider(dataSource,
                JdbcLockOptions.defaults().withWatchdogTimeout(Duration.ofMillis(Long.parseLong(args[5]))));
        LockHandle handle = provider.acquire(new LockRequest(args[3], 0, Duration.ofMillis(Long.parseLong(args[4])).toNanos(),
                false, LockOwner.next())).join();
        if (handle == null) {
            System.out.println("NOT ACQUIRED");
            System.exit(2);
        }
        System.out.println("HOLDING " + handle);
        System.out.flush();
        // held until SIGKILL: the point is a holder that never gets to release
        new CountDownLatch(1).await();
    }
}

package io.github.distlock.jdbc;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.TcpProxy;
import org.postgresql.ds.PGSimpleDataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The database stops answering one instance (its traffic stalls in a {@link TcpProxy}; a network partition and a
 * hung database look the same from the application): its watchdog lock expires in the database by the database's
 * clock and is taken by another instance; the stalled holder is told while it still runs (its renewals failed for a
 * whole watchdog timeout); its new acquisitions fail with an error, never "not acquired"; once the traffic flows again
 * its release answers {@code false} and leaves the new holder's lock alone.
 */
class DatabaseStallTest {

    private static final Duration WATCHDOG = Duration.ofSeconds(1);

    @RegisterExtension
    static final Database db = Database.postgres();

    @Test
    void aStalledHolderIsToldItsLockIsLostAndTheLockGoesToAnotherInstance() throws Exception {
        Matcher port = Pattern.compile("//[^:/]+:(\\d+)/").matcher(db.connectionArguments().get(0));
        assertThat(port.find()).isTrue();
        String key = "stall:" + System.nanoTime();
        JdbcLockOptions options = JdbcLockOptions.defaults().withWatchdogTimeout(WATCHDOG);
        try (TcpProxy proxy = TcpProxy.start(Integer.parseInt(port.group(1)));
                HikariDataSource stalled = pool(proxy.port());
                JdbcLockProvider holder = new JdbcLockProvider(stalled, options);
                JdbcLockProvider other = new JdbcLockProvider(db.dataSource(), options)) {
            LockHandle held = holder.acquire(new LockRequest(key, 0, 0, true, LockOwner.next())).join();
            assertThat(held).isNotNull();
            CompletableFuture<String> lost = new CompletableFuture<>();
            held.whenLost(lost::complete);

            proxy.pause();
            long pausedAt = System.nanoTime();
            LockHandle next = other.acquire(new LockRequest(key, WATCHDOG.plusSeconds(5).toNanos(), 0, true,
                    LockOwner.next())).get(15, TimeUnit.SECONDS);
            long takenAfter = millisSince(pausedAt);
            assertThat(next).as("the lock, for another instance, once the stalled holder's lease ran out").isNotNull();
            assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());

            String reason = lost.get(WATCHDOG.plusSeconds(5).toMillis(), TimeUnit.MILLISECONDS);
            long toldAfter = millisSince(pausedAt);
            assertThat(reason).contains(key).contains("could not renew");
            // told about when the database let the lock go, not when a hanging renewal statement gave up
            assertThat(toldAfter).as("ms from the stall to the loss report").isLessThan(WATCHDOG.toMillis() + 700);
            assertThat(held.lostWhileHeld()).isTrue();

            long askedAt = System.nanoTime();
            assertThatThrownBy(() -> holder.acquire(new LockRequest(key + ":other", 0, 0, false, LockOwner.next()))
                    .get(15, TimeUnit.SECONDS)).as("an acquisition while the database does not answer")
                    .isInstanceOf(ExecutionException.class).cause().isInstanceOf(JdbcLockException.class)
                    .hasMessageContaining(key + ":other");
            long failedAfter = millisSince(askedAt);

            proxy.resume();
            assertThat(held.release()).as("release by the stalled holder, after the stall").isFalse();
            assertThat(db.lockRow(key).get("owner").toString()).startsWith(other.instanceId());
            assertThat(next.release()).isTrue();
            System.out.printf("MEASURED jdbc/postgresql stall: lock taken by another instance %d ms after the holder was "
                    + "cut off, holder told %d ms after (watchdog %d ms); acquisition during the stall failed after %d ms"
                    + "%n", takenAfter, toldAfter, WATCHDOG.toMillis(), failedAfter);
        }
    }

    /**
     * The health question: {@code ping} answers {@code true} while the database answers, {@code false} within its
     * timeout once the traffic stalls (never throwing, never waiting for the driver's socket timeout), and {@code true}
     * again once the traffic flows.
     */
    @Test
    void pingIsFalseWithinItsTimeoutWhileTheDatabaseStallsAndTrueAgainAfter() {
        Matcher port = Pattern.compile("//[^:/]+:(\\d+)/").matcher(db.connectionArguments().get(0));
        assertThat(port.find()).isTrue();
        Duration timeout = Duration.ofMillis(500);
        try (TcpProxy proxy = TcpProxy.start(Integer.parseInt(port.group(1)));
                HikariDataSource stalled = pool(proxy.port());
                JdbcLockProvider provider = new JdbcLockProvider(stalled, JdbcLockOptions.defaults())) {
            assertThat(provider.ping(timeout)).as("ping while the database answers").isTrue();

            proxy.pause();
            for (int i = 0; i < 2; i++) {
                long askedAt = System.nanoTime();
                assertThat(provider.ping(timeout)).as("ping %d while the traffic stalls", i).isFalse();
                assertThat(millisSince(askedAt)).as("ms a ping took while the traffic stalls")
                        .isLessThan(timeout.toMillis() + 400);
            }

            proxy.resume();
            await().atMost(Duration.ofSeconds(10)).until(() -> provider.ping(timeout));
        }
    }

    /**
     * A ping stuck on a dead connection of the pool (its route blackholed for good, so that not even the query
     * timeout's cancel reaches the server, as on a half-open socket), while new connections reach the database: the
     * health question is answered {@code true} again at once, not when TCP gives up on the dead connection. With a
     * driver that has network timeouts the stuck ping ends after its timeout and gives its connection back (here the
     * pool's only one).
     */
    @Test
    void aPingStuckOnADeadConnectionEndsAfterItsTimeoutAndGivesItsConnectionBack() {
        pingRecoversFromADeadConnection(1, false);
    }

    /**
     * As above, with a driver that has no network timeout: the stuck ping never ends by itself, and a new ping is sent
     * once it is twice its timeout old, on another connection of the pool.
     */
    @Test
    void aPingStuckOnADeadConnectionIsReplacedWhenTheDriverCannotTimeItOut() {
        pingRecoversFromADeadConnection(2, true);
    }

    private static void pingRecoversFromADeadConnection(int poolSize, boolean noNetworkTimeout) {
        Matcher port = Pattern.compile("//[^:/]+:(\\d+)/").matcher(db.connectionArguments().get(0));
        assertThat(port.find()).isTrue();
        int database = Integer.parseInt(port.group(1));
        Duration timeout = Duration.ofMillis(300);
        PGSimpleDataSource target = new PGSimpleDataSource();
        target.setServerNames(new String[] {"127.0.0.1"});
        target.setDatabaseName("postgres");
        target.setUser(db.connectionArguments().get(1));
        target.setPassword(db.connectionArguments().get(2));
        target.setConnectTimeout(1);
        // no socket timeout: a read on a dead connection waits until TCP gives up, as with the driver's defaults
        try (TcpProxy dead = TcpProxy.start(database);
                TcpProxy route = TcpProxy.start(database)) {
            target.setPortNumbers(new int[] {dead.port()});
            HikariConfig config = new HikariConfig();
            config.setDataSource(target);
            config.setMaximumPoolSize(poolSize);
            config.setConnectionTimeout(1000);
            config.setValidationTimeout(250);
            try (HikariDataSource pool = new HikariDataSource(config);
                    // no listener: it would hold one of the pool's one or two connections for as long as it lives
                    JdbcLockProvider provider = new JdbcLockProvider(noNetworkTimeout
                            ? new FaultyDataSource(pool).refuseNetworkTimeouts().dataSource() : pool,
                            JdbcLockOptions.defaults().withNotifyReleases(false))) {
                assertThat(provider.ping(timeout)).as("ping while the database answers").isTrue();

                dead.pause();
                target.setPortNumbers(new int[] {route.port()});
                assertThat(provider.ping(timeout)).as("ping on the pool's dead connection").isFalse();

                long recovering = System.nanoTime();
                await().atMost(Duration.ofSeconds(5)).until(() -> provider.ping(timeout));
                System.out.printf("MEASURED jdbc/postgresql ping after a dead connection (pool of %d%s): true again "
                        + "after %d ms%n", poolSize, noNetworkTimeout ? ", no network timeout" : "",
                        millisSince(recovering));
            }
        }
    }

    /** A pool whose statements give up after 3 s, and connection attempts after 1 s, when the database does not answer. */
    private static HikariDataSource pool(int port) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl("jdbc:postgresql://127.0.0.1:" + port + "/postgres?socketTimeout=3&connectTimeout=1");
        config.setUsername(db.connectionArguments().get(1));
        config.setPassword(db.connectionArguments().get(2));
        config.setMaximumPoolSize(4);
        config.setConnectionTimeout(1000);
        config.setValidationTimeout(500);
        return new HikariDataSource(config);
    }

    private static long millisSince(long nanoTime) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - nanoTime);
    }
}

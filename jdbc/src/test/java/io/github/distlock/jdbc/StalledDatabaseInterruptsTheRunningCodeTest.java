package io.github.distlock.jdbc;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.LeaseLostPolicy;
import io.github.distlock.LockEvent;
import io.github.distlock.LockLeaseLostException;
import io.github.distlock.LockListener;
import io.github.distlock.LockOptions;
import io.github.distlock.testsupport.TcpProxy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The database stops answering a holder (its traffic stalls in a {@link TcpProxy}) while the holder's code runs: the
 * loss is reported once renewal failed for a watchdog timeout, and {@link LeaseLostPolicy#INTERRUPT} stops the code
 * within a third of that timeout (the renewal period) of the report.
 */
class StalledDatabaseInterruptsTheRunningCodeTest {

    private static final Duration WATCHDOG = Duration.ofSeconds(1);

    @RegisterExtension
    static final Database db = Database.postgres();

    @Test
    void aStalledDatabaseInterruptsTheCodeWithinTheRenewalPeriodOfTheReportedLoss() throws Exception {
        Matcher port = Pattern.compile("//[^:/]+:(\\d+)/").matcher(db.connectionArguments().get(0));
        assertThat(port.find()).isTrue();
        CompletableFuture<Long> reportedAt = new CompletableFuture<>();
        LockListener clock = new LockListener() {
            @Override
            public void onLeaseLost(LockEvent event) {
                reportedAt.complete(System.nanoTime());
            }
        };
        try (TcpProxy proxy = TcpProxy.start(Integer.parseInt(port.group(1)));
                HikariDataSource stalled = pool(proxy.port());
                JdbcLockProvider provider = new JdbcLockProvider(stalled,
                        JdbcLockOptions.defaults().withWatchdogTimeout(WATCHDOG))) {
            DefaultLockTemplate template = new DefaultLockTemplate(provider, "lock:", Duration.ZERO, null,
                    List.of(clock));
            CountDownLatch held = new CountDownLatch(1);
            CompletableFuture<Long> stoppedAt = new CompletableFuture<>();
            CompletableFuture<Object> call = CompletableFuture.supplyAsync(() -> {
                try {
                    return template.execute("stalled", LockOptions.DEFAULTS.withLeaseLostPolicy(LeaseLostPolicy.INTERRUPT),
                            () -> {
                                held.countDown();
                                try {
                                    return new CountDownLatch(1).await(30, TimeUnit.SECONDS);
                                }
                                catch (InterruptedException ex) {
                                    stoppedAt.complete(System.nanoTime());
                                    throw ex;
                                }
                            });
                }
                catch (InterruptedException ex) {
                    throw new CompletionException(ex);
                }
            });
            assertThat(held.await(10, TimeUnit.SECONDS)).isTrue();

            proxy.pause();
            long stopped;
            try {
                stopped = stoppedAt.get(15, TimeUnit.SECONDS);
            }
            finally {
                proxy.resume();
            }

            assertThat(Duration.ofNanos(stopped - reportedAt.get(1, TimeUnit.SECONDS)))
                    .as("from the report to the code's stop").isLessThan(WATCHDOG.dividedBy(3));
            assertThat(call).failsWithin(Duration.ofSeconds(15)).withThrowableThat().havingCause()
                    .isInstanceOf(LockLeaseLostException.class)
                    .withMessageStartingWith("Lock 'lock:stalled' was lost while its code ran")
                    .withCauseInstanceOf(InterruptedException.class);
            template.shutdown();
        }
    }

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
}

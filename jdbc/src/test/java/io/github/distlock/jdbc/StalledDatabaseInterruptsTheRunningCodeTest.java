package io.github.distlock.jdbc;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.distlock.LeaseLostPolicy;
import io.github.distlock.testsupport.TcpProxy;
import io.github.distlock.test.InterruptOnLeaseLossCheck;
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
        try (TcpProxy proxy = TcpProxy.start(Integer.parseInt(port.group(1)));
                HikariDataSource stalled = pool(proxy.port());
                JdbcLockProvider provider = new JdbcLockProvider(stalled,
                        JdbcLockOptions.defaults().withWatchdogTimeout(WATCHDOG))) {
            InterruptOnLeaseLossCheck.on(provider).run("stalled", WATCHDOG.dividedBy(3), proxy::pause, proxy::resume);
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

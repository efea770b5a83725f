package io.github.distlock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

import static org.awaitility.Awaitility.await;

/**
 * A worker instance in its own JVM, started by {@link BatchClaimingTest}: processes rows of {@code work_item} with a
 * {@link JdbcBatchClaimer} until none is pending, logging each row it processes in {@code work_log} in the row's
 * transaction. A victim processes part of its first batch, prints {@code MIDBATCH <tag> <claimed>} and then waits to be
 * killed, its other claimed rows still tagged. A worker prints {@code STARTED} and begins when a line arrives on its
 * standard input.
 *
 * <p>Arguments: JDBC URL, user, password, worker name, batch size, stale-after in ms, {@code worker} or {@code victim}.
 */
public final class BatchWorkerMain {

    public static void main(String[] args) throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(args[0]);
        config.setUsername(args[1]);
        config.setPassword(args[2]);
        config.setMaximumPoolSize(3);
        String name = args[3];
        int batchSize = Integer.parseInt(args[4]);
        Duration staleAfter = Duration.ofMillis(Long.parseLong(args[5]));
        try (HikariDataSource dataSource = new HikariDataSource(config)) {
            JdbcBatchClaimer claimer = new JdbcBatchClaimer(dataSource, "work_item", "id", "claimed_by", "claimed_at",
                    "processed = FALSE", staleAfter);
            JdbcBatchClaimer.RowWork work = (connection, id) -> {
                try (PreparedStatement done = connection.prepareStatement(
                        "UPDATE work_item SET processed = TRUE WHERE id = ?");
                        PreparedStatement log = connection.prepareStatement(
                                "INSERT INTO work_log (item_id, worker) VALUES (?, ?)")) {
                    done.setObject(1, id);
                    done.executeUpdate();
                    log.setObject(1, id);
                    log.setString(2, name);
                    log.executeUpdate();
                }
                // the row's work takes a moment (busy, as real work is), so that the workers' batches overlap in time
                long until = System.nanoTime() + 2_000_000;
                while (System.nanoTime() - until < 0) {
                    Thread.onSpinWait();
                }
            };
            if (args[6].equals("victim")) {
                JdbcBatchClaimer.Batch batch = claimer.claim(batchSize);
                int half = batch.ids().size() / 2;
                for (Object id : batch.ids().subList(0, half)) {
                    try (Connection connection = dataSource.getConnection()) {
                        connection.setAutoCommit(false);
                        if (claimer.takeOver(connection, id, batch.tag())) {
                            work.process(connection, id);
                        }
                        connection.commit();
                    }
                }
                System.out.println("MIDBATCH " + batch.tag() + " " + batch.ids().size() + " " + half);
                System.out.flush();
                // killed here, half of its batch still claimed and unprocessed
                new CountDownLatch(1).await();
            }
            System.out.println("STARTED " + name);
            System.out.flush();
            // all workers begin together, so that they compete for the same rows
            new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
            AtomicInteger processed = new AtomicInteger();
            // a round that finds nothing to claim while rows are pending (claimed by others, or by a dead instance
            // until its claims go stale) is asked again 50 ms later, until no row is pending
            await().atMost(Duration.ofMinutes(3)).pollInSameThread().pollDelay(Duration.ZERO)
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> {
                        int done;
                        while ((done = claimer.processBatch(batchSize, work)) > 0) {
                            processed.addAndGet(done);
                        }
                        return pending(dataSource) == 0;
                    });
            System.out.println("DONE " + name + " " + processed.get());
        }
    }

    private static int pending(HikariDataSource dataSource) throws Exception {
        try (Connection connection = dataSource.getConnection();
                ResultSet rows = connection.createStatement().executeQuery(
                        "SELECT COUNT(*) FROM work_item WHERE processed = FALSE")) {
            rows.next();
            return rows.getInt(1);
        }
    }
}

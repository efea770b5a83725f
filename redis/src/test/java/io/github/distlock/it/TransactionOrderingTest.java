package io.github.distlock.it;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.github.distlock.DistributedLock;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A {@code @Transactional} method under a lock: each call reads the last ticket number, inserts the next one and
 * commits. With the lock outside the transaction (the default order), every caller that gets the lock sees the previous
 * caller's committed row, so tickets are 1..N without a gap or duplicate. The control puts the transaction outside the
 * lock (it commits after the release) and switches off the transaction-bound release, and the same workload then
 * hands out duplicates; with the transaction-bound release on (the default), that ordering is safe too.
 */
class TransactionOrderingTest {

    static final int THREADS = 4;
    static final int CALLS_PER_THREAD = 15;

    static List<Integer> issueTickets(TicketService tickets, JdbcTemplate jdbc) throws Exception {
        jdbc.execute("CREATE TABLE IF NOT EXISTS ticket (id IDENTITY PRIMARY KEY, number INT NOT NULL)");
        jdbc.execute("DELETE FROM ticket");
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try {
            List<Future<?>> results = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                results.add(pool.submit(() -> {
                    for (int i = 0; i < CALLS_PER_THREAD; i++) {
                        tickets.issueNext();
                    }
                    return null;
                }));
            }
            for (Future<?> result : results) {
                result.get(120, TimeUnit.SECONDS);
            }
        }
        finally {
            pool.shutdownNow();
        }
        return jdbc.queryForList("SELECT number FROM ticket ORDER BY number", Integer.class);
    }

    @Nested
    @SpringBootTest(classes = {LockTestApplication.class, TicketConfig.class},
            properties = "spring.datasource.url=jdbc:h2:mem:tickets-default;DB_CLOSE_DELAY=-1")
    class LockOutsideTransaction extends RedisIntegrationTest {

        @Autowired
        TicketService tickets;

        @Autowired
        JdbcTemplate jdbc;

        @Test
        void eachCallerSeesThePreviousCallersCommittedRow() throws Exception {
            List<Integer> numbers = issueTickets(tickets, jdbc);

            assertThat(numbers).hasSize(THREADS * CALLS_PER_THREAD).doesNotHaveDuplicates();
            assertThat(numbers.get(numbers.size() - 1)).isEqualTo(THREADS * CALLS_PER_THREAD);
        }
    }

    /**
     * The advisor ordered inside the transaction: the lock is taken while the transaction is active, so its release
     * waits for the commit (distlock.release-after-transaction, on by default) and the next holder sees the row.
     */
    @Nested
    @SpringBootTest(classes = {LockTestApplication.class, TicketConfig.class, TransactionOutside.class},
            properties = "spring.datasource.url=jdbc:h2:mem:tickets-bound;DB_CLOSE_DELAY=-1")
    class TransactionOutsideLockReleasedAfterCompletion extends RedisIntegrationTest {

        @Autowired
        TicketService tickets;

        @Autowired
        JdbcTemplate jdbc;

        @Test
        void theReleaseWaitsForTheCommitSoEachCallerSeesThePreviousRow() throws Exception {
            List<Integer> numbers = issueTickets(tickets, jdbc);

            assertThat(numbers).hasSize(THREADS * CALLS_PER_THREAD).doesNotHaveDuplicates();
            assertThat(redisCommands.keys("lock:*")).as("every lock released after its transaction").isEmpty();
        }
    }

    /** The same ordering with the transaction-bound release switched off: the stale read it prevents. */
    @Nested
    @SpringBootTest(classes = {LockTestApplication.class, TicketConfig.class, TransactionOutside.class},
            properties = {"spring.datasource.url=jdbc:h2:mem:tickets-control;DB_CLOSE_DELAY=-1",
                    "distlock.release-after-transaction=false"})
    class ControlTransactionOutsideLock extends RedisIntegrationTest {

        @Autowired
        TicketService tickets;

        @Autowired
        JdbcTemplate jdbc;

        @Test
        void committingAfterTheReleaseHandsOutDuplicates() throws Exception {
            List<Integer> numbers = issueTickets(tickets, jdbc);

            assertThat(numbers).hasSize(THREADS * CALLS_PER_THREAD);
            assertThat(numbers.stream().distinct().count()).as("distinct tickets").isLessThan(numbers.size());
        }
    }

    public static class TicketService {

        private final JdbcTemplate jdbc;

        public TicketService(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        @DistributedLock(key = "'tickets'", waitTime = 60_000)
        @Transactional
        public void issueNext() {
            Integer last = jdbc.queryForObject("SELECT COALESCE(MAX(number), 0) FROM ticket", Integer.class);
            jdbc.update("INSERT INTO ticket (number) VALUES (?)", last + 1);
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void beforeCommit(boolean readOnly) {
                    // widen the gap between the lock's release and the commit, should the commit come second
                    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(20);
                    while (System.nanoTime() < until) {
                        Thread.onSpinWait();
                    }
                }
            });
        }
    }

    @TestConfiguration
    static class TicketConfig {
        @Bean
        TicketService ticketService(JdbcTemplate jdbc) {
            return new TicketService(jdbc);
        }
    }

    /** Puts the transaction advisor outside the lock advisor: the ordering the default exists to prevent. */
    @TestConfiguration
    @EnableTransactionManagement(order = Ordered.HIGHEST_PRECEDENCE)
    static class TransactionOutside {
    }
}

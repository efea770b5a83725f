package io.github.distlock.idempotency;

import java.util.UUID;

import io.github.distlock.idempotency.PaymentsApplication.PaymentRequest;
import io.github.distlock.idempotency.PaymentsApplication.Receipt;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

import static io.github.distlock.idempotency.IdempotentMarkFollowsTheCallerTransactionTest.markKey;
import static io.github.distlock.idempotency.IdempotentMarkFollowsTheCallerTransactionTest.request;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The mark of an {@link Idempotent} call is stored exactly when the call's work is committed: not when that work was
 * rolled back to a savepoint inside a caller's transaction that commits (the payment is gone, a redelivery must pay),
 * and not dropped when that work was committed outside the caller's transaction (its own database) and the caller's
 * transaction rolls back (the payment stays, a redelivery must not pay again). Two application instances on one
 * redis-server and one H2 payments database; the probes are the payment rows and the count of body runs.
 */
@Tag("open-defect")
class IdempotentMarkIsStoredExactlyWhenTheWorkCommitsTest extends TwoPaymentInstances {

    private TransactionTemplate payments;
    private TransactionTemplate savepoint;
    private TransactionTemplate orders;

    @BeforeAll
    void start() {
        DataSourceTransactionManager paymentsManager = new DataSourceTransactionManager(a.jdbc().getDataSource());
        payments = new TransactionTemplate(paymentsManager);
        savepoint = new TransactionTemplate(paymentsManager);
        savepoint.setPropagationBehavior(TransactionDefinition.PROPAGATION_NESTED);
        // another database of the same application: its transaction does not hold the payment's writes
        orders = new TransactionTemplate(new DataSourceTransactionManager(new SimpleDriverDataSource(
                new org.h2.Driver(), "jdbc:h2:mem:orders-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1", "sa", "")));
    }

    /** The payment is rolled back to a savepoint, the caller's transaction commits: no mark, the redelivery pays. */
    @Test
    void aPaymentRolledBackToASavepointIsNotMarkedAndItsRedeliveryPays() {
        PaymentRequest request = request();
        payments.executeWithoutResult(outer -> {
            assertThatThrownBy(() -> savepoint.executeWithoutResult(nested -> {
                a.payments().settle(request);
                throw new IllegalStateException("stock check of " + request.id() + " failed after paying");
            })).isInstanceOf(IllegalStateException.class);
        });
        assertThat(a.rows(request.id())).as("payment rows after the savepoint rollback").isZero();
        assertThat(a.exists(markKey(request))).as("mark of a payment that was rolled back").isFalse();

        Receipt redelivered = b.payments().settle(request);
        assertThat(redelivered.run()).as("run that answered the redelivery").isEqualTo(2);
        assertThat(a.rows(request.id())).as("payment rows after the redelivery").isOne();
    }

    /** Inside the same transaction, after the savepoint rollback, the retry must pay: it got a receipt of nothing. */
    @Test
    void aRetryInTheTransactionAfterASavepointRollbackPays() {
        PaymentRequest request = request();
        Receipt retried = payments.execute(outer -> {
            try {
                savepoint.executeWithoutResult(nested -> {
                    a.payments().settle(request);
                    throw new IllegalStateException("stock check of " + request.id() + " failed after paying");
                });
            }
            catch (IllegalStateException rolledBackToTheSavepoint) {
                // the order is retried in the same transaction
            }
            return a.payments().settle(request);
        });
        assertThat(a.rows(request.id())).as("payment rows after the retried order committed").isOne();
        assertThat(retried.run()).isEqualTo(2);
    }

    /**
     * The payment is written to the payments database outside the caller's transaction (which is on the orders
     * database), so it is committed when the call returns; the caller's transaction then rolls back. The redelivery
     * must be answered from the mark, not charge a second time.
     */
    @Test
    void aPaymentCommittedOutsideTheCallerTransactionIsMarkedEvenWhenThatTransactionRollsBack() {
        PaymentRequest request = request();
        assertThatThrownBy(() -> orders.executeWithoutResult(order -> {
            a.payments().settle(request);
            throw new IllegalStateException("order of " + request.id() + " failed after paying");
        })).isInstanceOf(IllegalStateException.class);
        assertThat(a.rows(request.id())).as("payment rows: committed when the call returned").isOne();

        Receipt redelivered = b.payments().settle(request);
        assertThat(PaymentsApplication.runs(request.id())).as("body runs").isOne();
        assertThat(a.rows(request.id())).as("payment rows after the redelivery (a second charge?)").isOne();
        assertThat(redelivered.run()).isOne();
    }
}

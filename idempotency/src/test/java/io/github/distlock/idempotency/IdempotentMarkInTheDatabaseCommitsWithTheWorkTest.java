package io.github.distlock.idempotency;


import io.github.distlock.idempotency.PaymentsApplication.Checkout.After;
import io.github.distlock.idempotency.PaymentsApplication.PaymentRequest;
import org.junit.jupiter.api.Test;

import static io.github.distlock.idempotency.IdempotentMarkFollowsTheCallerTransactionTest.markKey;
import static io.github.distlock.idempotency.IdempotentMarkFollowsTheCallerTransactionTest.request;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A store that joins transactions writes the mark "inside the caller's transaction (atomic with the work)": the work
 * and its mark commit together or not at all. When the mark's write fails inside the transaction (a failing
 * statement: a constraint, a value too long, the connection), the work must not commit without it, or the redelivery
 * pays a second time. Two instances on one redis-server and one H2 database, marks in its table.
 */
class IdempotentMarkInTheDatabaseCommitsWithTheWorkTest extends TwoPaymentInstances {

    @Override
    String[] instanceProperties() {
        return new String[] { "payments.store=jdbc" };
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

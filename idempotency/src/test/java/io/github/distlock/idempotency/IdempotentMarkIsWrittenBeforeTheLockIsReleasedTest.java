package io.github.distlock.idempotency;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import io.github.distlock.idempotency.PaymentsApplication.PaymentRequest;
import io.github.distlock.idempotency.PaymentsApplication.Receipt;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

import static io.github.distlock.idempotency.IdempotentMarkFollowsTheCallerTransactionTest.lockKey;
import static io.github.distlock.idempotency.IdempotentMarkFollowsTheCallerTransactionTest.markKey;
import static io.github.distlock.idempotency.IdempotentMarkFollowsTheCallerTransactionTest.request;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * "The mark is written when the transaction has committed, still under the lock": at no moment after the commit is
 * the key's lock free while its mark is missing, or a duplicate on another instance runs the code again. Here the
 * call succeeded on its second try inside one transaction (the first try failed and was caught: a retry loop), so
 * the key's lock was already waiting for the transaction's end when the successful try ran. A synchronization of the
 * application, registered between the two tries, looks at Redis and sends the duplicate at that moment. Two instances
 * on one redis-server and one H2 database.
 */
class IdempotentMarkIsWrittenBeforeTheLockIsReleasedTest extends TwoPaymentInstances {

    /** The same look at the same moment, for a call that succeeded at its first try: the lock is still held. */
    @Test
    void aCallThatSucceededAtOnceKeepsItsLockUntilItsMarkIsWritten() throws Exception {
        assertDuplicateAfterCommitDoesNotPay(false);
    }

    @Test
    void aCallThatSucceededOnItsRetryInTheTransactionKeepsItsLockUntilItsMarkIsWritten() throws Exception {
        assertDuplicateAfterCommitDoesNotPay(true);
    }

    private void assertDuplicateAfterCommitDoesNotPay(boolean firstTryFails) throws Exception {
        PaymentRequest request = request();
        TransactionTemplate transaction = new TransactionTemplate(
                new DataSourceTransactionManager(a.jdbc().getDataSource()));
        AtomicReference<String> seen = new AtomicReference<>();
        AtomicReference<Object> duplicateOutcome = new AtomicReference<>();
        ExecutorService other = Executors.newSingleThreadExecutor();
        try {
            Receipt receipt = transaction.execute(status -> {
                if (firstTryFails) {
                    a.payments().failNext(request.id(), new IllegalStateException("gateway timeout"));
                    try {
                        a.payments().settle(request);
                    }
                    catch (IllegalStateException firstTryFailed) {
                        // retried below, in the same transaction
                    }
                }
                TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                    @Override
                    public void afterCompletion(int completion) {
                        seen.set("lock held: " + a.exists(lockKey(request)) + ", mark: " + a.exists(markKey(request)));
                        Future<Receipt> duplicate = other.submit(() -> b.payments().settleRefusing(request));
                        try {
                            duplicateOutcome.set(duplicate.get(20, TimeUnit.SECONDS));
                        }
                        catch (Exception ex) {
                            duplicateOutcome.set(ex.getCause());
                        }
                    }
                });
                return a.payments().settle(request);
            });
            assertThat(receipt.run()).isEqualTo(firstTryFails ? 2 : 1);
            assertThat(a.rows(request.id())).as("payment rows (%s; the duplicate got %s)", seen.get(),
                    duplicateOutcome.get()).isOne();
            assertThat(seen.get()).isNotEqualTo("lock held: false, mark: false");
        }
        finally {
            other.shutdownNow();
        }
    }
}

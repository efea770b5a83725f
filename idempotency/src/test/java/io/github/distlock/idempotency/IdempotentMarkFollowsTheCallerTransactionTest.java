package io.github.distlock.idempotency;

import java.math.BigDecimal;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.github.distlock.idempotency.PaymentsApplication.Checkout.After;
import io.github.distlock.idempotency.PaymentsApplication.PaymentRequest;
import io.github.distlock.idempotency.PaymentsApplication.Receipt;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The promise "a failure stores no mark", for the failure that comes after the method returned: the caller's
 * transaction rolling back. The mark of an {@link Idempotent} call made inside the caller's transaction is written when
 * that transaction commits, and never when it rolls back; until then duplicates neither run nor are answered. Two
 * application instances on one redis-server and one H2 database; the probes are the rows of {@code payment} and a
 * count of body runs kept outside the library.
 */
class IdempotentMarkFollowsTheCallerTransactionTest extends TwoPaymentInstances {

    @Test
    void aCallerTransactionThatRollsBackAfterTheCallStoresNoMarkAndTheRedeliveryPays() {
        PaymentRequest request = request();
        assertThatThrownBy(() -> a.checkout().pay(a.payments(), request, After.THROW, () -> { }))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("checkout of " + request.id() + " failed after paying");
        assertThat(a.rows(request.id())).as("rows after the rollback").isZero();
        assertThat(a.exists(markKey(request))).as("mark after the rollback").isFalse();
        assertThat(a.exists(lockKey(request))).as("lock after the rollback").isFalse();

        // the redelivered callback, on the other instance: it must pay, not be answered from a mark
        Receipt redelivered = b.payments().settle(request);
        assertThat(redelivered.run()).isEqualTo(2);
        assertThat(a.rows(request.id())).as("rows after the redelivery").isOne();
        assertThat(PaymentsApplication.runs(request.id())).isEqualTo(2);
        assertThat(a.exists(markKey(request))).isTrue();
    }

    @Test
    void aCallerTransactionMarkedRollbackOnlyStoresNoMark() {
        PaymentRequest request = request();
        // the caller returns normally; its transaction, marked rollback-only, rolls back silently
        a.checkout().pay(a.payments(), request, After.SET_ROLLBACK_ONLY, () -> { });
        assertThat(a.rows(request.id())).isZero();
        assertThat(a.exists(markKey(request))).as("mark after the rollback").isFalse();
        assertThat(b.payments().settle(request).run()).isEqualTo(2);
        assertThat(a.rows(request.id())).isOne();
    }

    @Test
    void aCommitThatFailsStoresNoMark() {
        PaymentRequest request = request();
        assertThatThrownBy(() -> a.checkout().pay(a.payments(), request, After.FAIL_COMMIT, () -> { }))
                .isInstanceOf(IllegalStateException.class).hasMessage("commit of " + request.id() + " failed");
        assertThat(a.rows(request.id())).isZero();
        assertThat(a.exists(markKey(request))).as("mark after the failed commit").isFalse();
        assertThat(a.exists(lockKey(request))).as("lock after the failed commit").isFalse();
    }

    @Test
    void aCommittedCallerTransactionStoresTheMarkAndADuplicateGetsTheResult() {
        PaymentRequest request = request();
        Receipt first = a.checkout().pay(a.payments(), request, After.COMMIT, () -> { });
        assertThat(a.exists(markKey(request))).isTrue();
        assertThat(a.redisson().getBucket(markKey(request)).remainTimeToLive()).as("PTTL of the mark")
                .isPositive().isLessThanOrEqualTo(24 * 3600 * 1000L);
        assertThat(b.payments().settle(request)).isEqualTo(first);
        assertThat(PaymentsApplication.runs(request.id())).isOne();
        assertThat(a.rows(request.id())).isOne();
    }

    @Test
    void aDuplicateArrivingBeforeTheCommitIsNotAnsweredFromAMarkThatMayRollBack() throws Exception {
        PaymentRequest request = request();
        ExecutorService other = Executors.newSingleThreadExecutor();
        try {
            // between the method's return and the commit, the other instance's duplicate is refused, not answered
            assertThatThrownBy(() -> a.checkout().pay(a.payments(), request, After.THROW, () -> {
                Future<Receipt> duplicate = other.submit(() -> b.payments().settleRefusing(request));
                assertThatThrownBy(() -> duplicate.get(10, TimeUnit.SECONDS)).cause()
                        .isInstanceOf(RequestInProgressException.class)
                        .hasMessage("A call with idempotency key 'pay:" + request.id() + "' is still running; this "
                                + "duplicate was refused. Retry later for its result.");
            })).isInstanceOf(IllegalStateException.class);
            assertThat(a.rows(request.id())).isZero();
            assertThat(PaymentsApplication.runs(request.id())).isOne();
        }
        finally {
            other.shutdownNow();
        }
    }

    @Test
    void aDuplicateWaitingThroughTheCommitGetsTheCommittedResultWithoutRunning() throws Exception {
        PaymentRequest request = request();
        ExecutorService other = Executors.newSingleThreadExecutor();
        CountDownLatch duplicateStarted = new CountDownLatch(1);
        try {
            CompletableFuture<Future<Receipt>> waiting = new CompletableFuture<>();
            Receipt first = a.checkout().pay(a.payments(), request, After.COMMIT, () -> {
                waiting.complete(other.submit(() -> {
                    duplicateStarted.countDown();
                    return b.payments().settle(request);
                }));
                try {
                    assertThat(duplicateStarted.await(10, TimeUnit.SECONDS)).isTrue();
                }
                catch (InterruptedException ex) {
                    throw new IllegalStateException(ex);
                }
            });
            assertThat(waiting.get().get(30, TimeUnit.SECONDS)).isEqualTo(first);
            assertThat(PaymentsApplication.runs(request.id())).isOne();
            assertThat(a.rows(request.id())).isOne();
        }
        finally {
            other.shutdownNow();
        }
    }

    @Test
    void theSameRequestTwiceInOneTransactionRunsOnce() {
        PaymentRequest request = request();
        Receipt receipt = a.checkout().payTwice(a.payments(), request);
        assertThat(receipt.run()).isOne();
        assertThat(PaymentsApplication.runs(request.id())).isOne();
        assertThat(a.rows(request.id())).isOne();
        assertThat(b.payments().settle(request)).isEqualTo(receipt);
    }

    @Test
    void aMethodWithItsOwnNewTransactionKeepsItsMarkWhenTheCallerRollsBack() {
        PaymentRequest request = request();
        assertThatThrownBy(() -> a.checkout().payInOwnTransactionThenThrow(a.payments(), request))
                .isInstanceOf(IllegalStateException.class);
        // its work was committed in its own transaction: the mark must say so, or the redelivery pays twice
        assertThat(a.rows(request.id())).isOne();
        assertThat(a.exists(markKey(request))).as("mark of the committed work").isTrue();
        assertThat(b.payments().settle(request).run()).isOne();
        assertThat(PaymentsApplication.runs(request.id())).isOne();
        assertThat(a.rows(request.id())).isOne();
    }

    @Test
    void aMarkThatCannotBeWrittenAfterTheCommitLeavesTheCommitAndFreesTheLock() {
        PaymentRequest request = request();
        a.store().failWrites.add(markKey(request));
        Receipt receipt = a.checkout().pay(a.payments(), request, After.COMMIT, () -> { });
        assertThat(receipt.run()).isOne();
        assertThat(a.rows(request.id())).isOne();
        assertThat(a.exists(markKey(request))).isFalse();
        assertThat(a.exists(lockKey(request))).as("lock after the failed mark write").isFalse();
    }

    @Test
    void aLockReleasedBeforeTheCommitRefusesCallsInsideATransaction() {
        PaymentRequest request = request();
        try (PaymentsApplication early = new PaymentsApplication(redis.uri(),
                "jdbc:h2:mem:early-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1",
                "distlock.release-after-transaction=false")) {
            assertThatThrownBy(() -> early.checkout().pay(early.payments(), request, After.COMMIT, () -> { }))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("Idempotent call 'pay:" + request.id() + "' runs inside a transaction, "
                            + "but the lock template releases its locks before the transaction ends "
                            + "(distlock.release-after-transaction=false)");
            assertThat(PaymentsApplication.runs(request.id())).isZero();
            // outside a transaction it runs as before
            assertThat(early.payments().settle(request).run()).isOne();
        }
    }

    @Test
    void aRedeliveryWithAnotherAmountThatTheRequestTextLeavesOutIsRefusedAsAnotherRequest() {
        PaymentRequest request = request();
        Receipt first = a.payments().settle(request);
        PaymentRequest otherAmount = new PaymentRequest(request.id(), new BigDecimal("99.00"), request.details(),
                request.note());
        assertThat(otherAmount.toString()).isEqualTo(request.toString());
        assertThatThrownBy(() -> b.payments().settle(otherAmount)).isInstanceOf(IdempotencyKeyReusedException.class)
                .hasMessage("Idempotency key 'pay:" + request.id() + "' was used before for a different request (its "
                        + "fingerprint differs); use a new key for a new request");
        // its details reordered and its amount at another scale: the same request, replayed
        Map<String, String> reordered = new java.util.LinkedHashMap<>();
        reordered.put("b", "2");
        reordered.put("a", "1");
        Map<String, String> ordered = new java.util.TreeMap<>(reordered);
        PaymentRequest withDetails = new PaymentRequest("p-" + UUID.randomUUID(), new BigDecimal("5.0"), ordered, "x");
        Receipt paid = a.payments().settle(withDetails);
        assertThat(b.payments().settle(new PaymentRequest(withDetails.id(), new BigDecimal("5.00"), reordered, "x")))
                .isEqualTo(paid);
        assertThat(PaymentsApplication.runs(request.id())).isOne();
        assertThat(PaymentsApplication.runs(withDetails.id())).isOne();
        assertThat(first.run()).isOne();
    }

    @Test
    void aRetryInTheSameTransactionAfterAFailedCallRuns() {
        PaymentRequest request = request();
        a.payments().failNext(request.id(), new IllegalStateException("card network timed out"));
        Receipt receipt = a.checkout().payRetrying(a.payments(), request);
        assertThat(receipt.run()).isEqualTo(2);
        assertThat(PaymentsApplication.runs(request.id())).isEqualTo(2);
        assertThat(a.rows(request.id())).isOne();
        assertThat(a.exists(markKey(request))).isTrue();
        assertThat(b.payments().settle(request)).isEqualTo(receipt);
    }

    @Test
    void aCommittedCallStoresItsMarkEvenWhenAnotherAfterCommitCallbackFails() {
        PaymentRequest request = request();
        assertThatThrownBy(() -> a.checkout().payBesideAFailingAfterCommit(a.payments(), request))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("afterCommit of another library failed for " + request.id());
        assertThat(a.rows(request.id())).as("rows: the transaction committed").isOne();
        assertThat(a.exists(markKey(request))).as("mark of the committed call").isTrue();
        assertThat(b.payments().settle(request).run()).isOne();
        assertThat(PaymentsApplication.runs(request.id())).isOne();
        assertThat(a.exists(lockKey(request))).isFalse();
    }

    @Test
    void aCallInASynchronizationScopeWithoutATransactionIsMarkedWhenItReturns() {
        PaymentRequest request = request();
        assertThatThrownBy(() -> a.checkout().payWithoutTransactionThenThrow(a.payments(), request))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("checkout of " + request.id() + " failed after paying");
        // no transaction: the row was committed by the insert itself, so the mark must stay
        assertThat(a.rows(request.id())).isOne();
        assertThat(a.exists(markKey(request))).as("mark of the committed work").isTrue();
        assertThat(b.payments().settle(request).run()).isOne();
        assertThat(a.rows(request.id())).isOne();
    }

    @Test
    void aStoreInTheTransactionsDatabaseWritesTheMarkInsideItSoARollbackTakesItBack() {
        String jdbcUrl = "jdbc:h2:mem:marks-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
        try (PaymentsApplication one = new PaymentsApplication(redis.uri(), jdbcUrl, "payments.store=jdbc");
                PaymentsApplication two = new PaymentsApplication(redis.uri(), jdbcUrl, "payments.store=jdbc")) {
            PaymentRequest rolledBack = request();
            assertThatThrownBy(() -> one.checkout().pay(one.payments(), rolledBack, After.THROW, () -> { }))
                    .isInstanceOf(IllegalStateException.class);
            assertThat(markRows(one, rolledBack)).as("mark rows after the rollback").isZero();
            assertThat(two.payments().settle(rolledBack).run()).isEqualTo(2);

            PaymentRequest committed = request();
            Receipt receipt = one.checkout().pay(one.payments(), committed, After.COMMIT, () -> { });
            assertThat(markRows(one, committed)).as("mark rows after the commit").isOne();
            assertThat(one.rows(committed.id())).isOne();
            assertThat(two.payments().settle(committed)).isEqualTo(receipt);
            assertThat(PaymentsApplication.runs(committed.id())).isOne();
            assertThat(one.exists(markKey(committed))).as("no mark in Redis").isFalse();

            // work committed in its own transaction, its mark in the caller's: refused before it runs
            PaymentRequest own = request();
            assertThatThrownBy(() -> one.checkout().payInOwnTransactionThenThrow(one.payments(), own))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("Idempotent call 'pay:" + own.id() + "' commits its work in a "
                            + "transaction of its own (REQUIRES_NEW, NOT_SUPPORTED), but it is called inside "
                            + "another transaction and its mark store joins transactions");
            assertThat(PaymentsApplication.runs(own.id())).isZero();
            assertThat(one.rows(own.id())).isZero();
        }
    }

    private static int markRows(PaymentsApplication app, PaymentRequest request) {
        return app.jdbc().queryForObject("SELECT COUNT(*) FROM idempotency_mark WHERE mark_key = ?", Integer.class,
                markKey(request));
    }

    @Test
    void aNestedIdempotentCallIsNotMarkedWhenTheOuterCallsTransactionRollsBack() {
        PaymentRequest request = request();
        assertThatThrownBy(() -> a.orders().place(request, true)).isInstanceOf(IllegalStateException.class)
                .hasMessage("order " + request.id() + " failed after paying");
        assertThat(a.exists(markKey(request))).as("mark of the nested payment").isFalse();
        assertThat(a.exists("lock:idempotent-mark:order:" + request.id())).as("mark of the order").isFalse();
        assertThat(a.rows(request.id())).isZero();

        // the retried order pays again: its payment was rolled back with it
        Receipt receipt = b.orders().place(request, false);
        assertThat(receipt.run()).isEqualTo(2);
        assertThat(a.rows(request.id())).isOne();
        assertThat(a.exists(markKey(request))).isTrue();
        assertThat(a.exists("lock:idempotent-mark:order:" + request.id())).isTrue();
        assertThat(a.orders().place(request, false)).isEqualTo(receipt);
        assertThat(PaymentsApplication.runs(request.id())).isEqualTo(2);
    }

    static PaymentRequest request() {
        return new PaymentRequest("p-" + UUID.randomUUID(), new BigDecimal("12.50"), Map.of("card", "4242"), "n");
    }

    static String markKey(PaymentRequest request) {
        return "lock:idempotent-mark:pay:" + request.id();
    }

    static String lockKey(PaymentRequest request) {
        return "lock:idempotent:pay:" + request.id();
    }
}

package io.github.distlock.test;

import java.util.function.Supplier;

import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.AbstractPlatformTransactionManager;
import org.springframework.transaction.support.DefaultTransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Runs generated calls inside a Spring transaction that commits or rolls back. The transaction manager has no resource:
 * what matters to a lock is only that synchronization is active, so that the lock's release waits for the end of the
 * transaction. Loaded only when spring-tx is on the class path ({@link ModelRunner#TRANSACTIONS}).
 */
final class ModelTransactions {

    private ModelTransactions() {
    }

    /** Runs {@code body} in a new transaction, committed when {@code commit}, else rolled back. */
    static <T> T inTransaction(boolean commit, Supplier<T> body) {
        TransactionTemplate transactions = new TransactionTemplate(new NoResourceTransactionManager());
        return transactions.execute(status -> {
            T value = body.get();
            if (!commit) {
                status.setRollbackOnly();
            }
            return value;
        });
    }

    /** A transaction manager with nothing to commit: only its synchronization is used. */
    private static final class NoResourceTransactionManager extends AbstractPlatformTransactionManager {

        @Override
        protected Object doGetTransaction() {
            return new Object();
        }

        @Override
        protected void doBegin(Object transaction, TransactionDefinition definition) {
        }

        @Override
        protected void doCommit(DefaultTransactionStatus status) {
        }

        @Override
        protected void doRollback(DefaultTransactionStatus status) {
        }
    }
}

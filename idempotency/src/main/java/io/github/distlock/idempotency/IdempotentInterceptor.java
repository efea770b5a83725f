package io.github.distlock.idempotency;

import java.util.function.Supplier;

import io.github.distlock.aop.AbstractOperationInterceptor;
import org.aopalliance.intercept.MethodInvocation;

/** Runs an {@link Idempotent} method through {@link IdempotencyTemplate}. */
public class IdempotentInterceptor extends AbstractOperationInterceptor<IdempotentOperation> {

    private static final boolean TRANSACTIONS_PRESENT = org.springframework.util.ClassUtils.isPresent(
            "org.springframework.transaction.support.TransactionSynchronizationManager",
            IdempotentInterceptor.class.getClassLoader());

    private final Supplier<IdempotencyTemplate> template;

    /**
     * @param operations the parsed annotations
     * @param template the engine
     * <p>Both are looked up on first use: the advisor is created with the bean post-processors, before the Redis
     * client or configuration properties may be.
     */
    public IdempotentInterceptor(Supplier<IdempotentOperationSource> operations,
            Supplier<IdempotencyTemplate> template) {
        super(operations);
        this.template = template;
    }

    /**
     * Whether this advice runs inside the method's own transaction (ordered inside {@code @Transactional}): the
     * transaction on the thread is then the one its work commits with, whatever its propagation. Spring names a
     * declarative transaction after the method it was begun for.
     */
    private static boolean insideOwnTransaction(java.lang.reflect.Method method, Class<?> targetClass) {
        if (!TRANSACTIONS_PRESENT) {
            return false;
        }
        String name = org.springframework.transaction.support.TransactionSynchronizationManager
                .getCurrentTransactionName();
        return name != null && name.equals(org.springframework.util.ClassUtils.getQualifiedMethodName(method,
                targetClass));
    }

    @Override
    protected Object execute(IdempotentOperation operation, MethodInvocation invocation, Object target,
            Class<?> targetClass) throws Throwable {
        Object[] args = invocation.getArguments();
        String key = operation.evaluateKey(args, target, targetClass);
        return template.get().execute(key, operation.options(args, target, targetClass), operation.resultType(),
                operation.joinsCallerTransaction() || insideOwnTransaction(invocation.getMethod(), targetClass),
                invocation::proceed);
    }
}

package io.github.distlock.idempotent;

import java.util.function.Supplier;

import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;

/** Runs an {@link Idempotent} method through {@link IdempotencyTemplate}. */
public class IdempotentInterceptor implements MethodInterceptor {

    private final Supplier<IdempotentOperationSource> operations;
    private final Supplier<IdempotencyTemplate> template;

    /**
     * @param operations the parsed annotations
     * @param template the engine
     * <p>Both are looked up on first use: the advisor is created with the bean post-processors, before the Redis
     * client or configuration properties may be.
     */
    public IdempotentInterceptor(Supplier<IdempotentOperationSource> operations,
            Supplier<IdempotencyTemplate> template) {
        this.operations = operations;
        this.template = template;
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        Object target = invocation.getThis();
        Class<?> targetClass = (target != null) ? AopUtils.getTargetClass(target) : null;
        IdempotentOperation operation = operations.get().getOperation(invocation.getMethod(), targetClass);
        if (operation == null) {
            return invocation.proceed();
        }
        Object[] args = invocation.getArguments();
        String key = operation.evaluateKey(args, target, targetClass);
        return template.get().execute(key, operation.options(args, target, targetClass), operation.resultType(),
                invocation::proceed);
    }
}

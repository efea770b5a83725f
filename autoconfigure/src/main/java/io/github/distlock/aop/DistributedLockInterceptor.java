package io.github.distlock.aop;

import java.util.function.Supplier;

import io.github.distlock.LockTemplate;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;

/**
 * Runs a {@link io.github.distlock.DistributedLock} method through {@link LockTemplate}: the one lock path.
 */
public class DistributedLockInterceptor implements MethodInterceptor {

    private final Supplier<LockOperationSource> operations;
    private final Supplier<LockTemplate> lockTemplate;

    /**
     * @param operations the parsed annotations
     * @param lockTemplate the template
     * <p>Both are looked up on first use: the advisor is created while bean post-processors are, and must not pull the
     * Redis client or configuration properties into existence that early.
     */
    public DistributedLockInterceptor(Supplier<LockOperationSource> operations, Supplier<LockTemplate> lockTemplate) {
        this.operations = operations;
        this.lockTemplate = lockTemplate;
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        Object target = invocation.getThis();
        Class<?> targetClass = (target != null) ? AopUtils.getTargetClass(target) : null;
        LockOperation operation = operations.get().getOperation(invocation.getMethod(), targetClass);
        if (operation == null) {
            return invocation.proceed();
        }
        String key = operation.evaluateKey(invocation.getArguments(), target, targetClass);
        return lockTemplate.get().execute(key, operation.options(), invocation::proceed);
    }
}

package io.github.distlock.aop;

import java.util.function.Supplier;

import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;

/**
 * Runs an annotated method through its operation, parsed once by an {@link AbstractOperationSource}; a method without
 * the annotation (an advised bean's other methods) just proceeds. What {@link io.github.distlock.DistributedLock}'s
 * and {@code @Idempotent}'s advice share, as Spring's {@code CacheInterceptor} sits over {@code CacheAspectSupport}.
 *
 * <p>Internal API of distlock's modules: not for applications.
 *
 * @param <O> what one annotated method is parsed into
 */
public abstract class AbstractOperationInterceptor<O> implements MethodInterceptor {

    private final Supplier<? extends AbstractOperationSource<?, O>> operations;

    /**
     * @param operations the parsed annotations, looked up on first use: the advisor is created while bean
     * post-processors are, and must not pull a backend's client or configuration properties into existence that early
     */
    protected AbstractOperationInterceptor(Supplier<? extends AbstractOperationSource<?, O>> operations) {
        this.operations = operations;
    }

    @Override
    public final Object invoke(MethodInvocation invocation) throws Throwable {
        Object target = invocation.getThis();
        Class<?> targetClass = (target != null) ? AopUtils.getTargetClass(target) : null;
        O operation = operations.get().getOperation(invocation.getMethod(), targetClass);
        if (operation == null) {
            return invocation.proceed();
        }
        return execute(operation, invocation, target, targetClass);
    }

    /**
     * Runs one call of an annotated method.
     *
     * @param operation the method's parsed annotation
     * @param invocation the call
     * @param target the bean, or {@code null}
     * @param targetClass its class, or {@code null}
     */
    protected abstract Object execute(O operation, MethodInvocation invocation, Object target, Class<?> targetClass)
            throws Throwable;
}

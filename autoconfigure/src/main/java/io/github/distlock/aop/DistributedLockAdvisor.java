package io.github.distlock.aop;

import io.github.distlock.DistributedLock;
import org.aopalliance.aop.Advice;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;

/**
 * Applies {@link DistributedLockInterceptor} to every method annotated with {@link DistributedLock} (on the class or
 * on an interface it implements).
 */
public class DistributedLockAdvisor extends AbstractPointcutAdvisor {

    private final Pointcut pointcut = new AnnotationMatchingPointcut(null, DistributedLock.class, true);
    private final DistributedLockInterceptor interceptor;

    /**
     * @param interceptor the advice
     * @param order where the lock sits among other advisors: lower runs outside
     */
    public DistributedLockAdvisor(DistributedLockInterceptor interceptor, int order) {
        this.interceptor = interceptor;
        setOrder(order);
    }

    @Override
    public Pointcut getPointcut() {
        return pointcut;
    }

    @Override
    public Advice getAdvice() {
        return interceptor;
    }
}

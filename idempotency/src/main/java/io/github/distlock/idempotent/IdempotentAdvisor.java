package io.github.distlock.idempotent;

import org.aopalliance.aop.Advice;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;

/** Applies {@link IdempotentInterceptor} to every method annotated with {@link Idempotent}. */
public class IdempotentAdvisor extends AbstractPointcutAdvisor {

    private final Pointcut pointcut = new AnnotationMatchingPointcut(null, Idempotent.class, true);
    private final IdempotentInterceptor interceptor;

    /**
     * @param interceptor the advice
     * @param order where it sits among other advisors: lower runs outside (it must run outside {@code @Transactional}
     * and {@code @DistributedLock})
     */
    public IdempotentAdvisor(IdempotentInterceptor interceptor, int order) {
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

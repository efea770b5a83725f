package io.github.distlock.idempotency;

import io.github.distlock.aop.AbstractAnnotationAdvisor;

/** Applies {@link IdempotentInterceptor} to every method annotated with {@link Idempotent}. */
public class IdempotentAdvisor extends AbstractAnnotationAdvisor {

    /**
     * @param interceptor the advice
     * @param order where it sits among other advisors: lower runs outside (it must run outside {@code @Transactional}
     * and {@code @DistributedLock})
     */
    public IdempotentAdvisor(IdempotentInterceptor interceptor, int order) {
        super(Idempotent.class, interceptor, order);
    }
}

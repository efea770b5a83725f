package io.github.distlock.aop;

import io.github.distlock.DistributedLock;

/**
 * Applies {@link DistributedLockInterceptor} to every method annotated with {@link DistributedLock} (on the class or
 * on an interface it implements).
 */
public class DistributedLockAdvisor extends AbstractAnnotationAdvisor {

    /**
     * @param interceptor the advice
     * @param order where the lock sits among other advisors: lower runs outside
     */
    public DistributedLockAdvisor(DistributedLockInterceptor interceptor, int order) {
        super(DistributedLock.class, interceptor, order);
    }
}

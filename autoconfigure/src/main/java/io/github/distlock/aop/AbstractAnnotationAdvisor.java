package io.github.distlock.aop;

import java.lang.annotation.Annotation;

import org.aopalliance.aop.Advice;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;

/**
 * Applies an advice to every method annotated with an annotation, on the class or on an interface it implements:
 * the advisor of {@link io.github.distlock.DistributedLock} and of {@code @Idempotent}, which differ in the
 * annotation, the advice and the order only.
 *
 * <p>Internal API of distlock's modules: not for applications.
 */
public abstract class AbstractAnnotationAdvisor extends AbstractPointcutAdvisor {

    private final Pointcut pointcut;
    private final Advice advice;

    /**
     * @param annotationType the annotation that marks the advised methods
     * @param advice what runs around them
     * @param order where it sits among other advisors: lower runs outside
     */
    protected AbstractAnnotationAdvisor(Class<? extends Annotation> annotationType, Advice advice, int order) {
        // checkInherited: the annotation may sit on an interface's method, as on @Transactional
        this.pointcut = new AnnotationMatchingPointcut(null, annotationType, true);
        this.advice = advice;
        setOrder(order);
    }

    @Override
    public Pointcut getPointcut() {
        return pointcut;
    }

    @Override
    public Advice getAdvice() {
        return advice;
    }
}

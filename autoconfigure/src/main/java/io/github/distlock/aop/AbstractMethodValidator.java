package io.github.distlock.aop;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import io.github.distlock.DistlockConfigurationException;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.util.ClassUtils;

/**
 * Checks every bean's annotated methods when the bean is created, so that a mistake fails the startup naming the
 * method instead of failing its first call, or never showing: what {@link io.github.distlock.DistributedLock} and
 * {@code @Idempotent} share.
 *
 * <p>This class finds the annotated methods, refuses those a Spring proxy cannot intercept (private, static or
 * final: their annotation would silently do nothing), parses each annotation through the
 * {@link AbstractOperationSource} (which fills its cache, so the first call does no parsing) and reports an invalid
 * one with what to do. A subclass adds what its annotation needs to run, before parsing, and checks of the parsed
 * operation against the backend, after.
 *
 * <p>Internal API of distlock's modules: not for applications.
 *
 * @param <A> the annotation
 * @param <O> what one annotated method is parsed into
 */
public abstract class AbstractMethodValidator<A extends Annotation, O> implements BeanPostProcessor {

    private final Class<A> annotationType;
    private final ObjectProvider<? extends AbstractOperationSource<A, O>> operations;
    private final String effect;
    private final String alternative;

    /** Classes already checked: prototypes and repeated factory products are scanned once. */
    private final Set<Class<?>> checked = ConcurrentHashMap.newKeySet();

    /**
     * @param annotationType the annotation checked
     * @param operations looked up lazily: a post-processor's dependencies would otherwise be created before
     * configuration properties can be bound
     * @param effect what the annotation would never do on a method the proxy cannot intercept ("take a lock")
     * @param alternative what to use instead of the annotation there ("lock with LockTemplate")
     */
    protected AbstractMethodValidator(Class<A> annotationType,
            ObjectProvider<? extends AbstractOperationSource<A, O>> operations, String effect, String alternative) {
        this.annotationType = annotationType;
        this.operations = operations;
        this.effect = effect;
        this.alternative = alternative;
    }

    @Override
    public Object postProcessBeforeInitialization(Object bean, String beanName) throws BeansException {
        check(ClassUtils.getUserClass(bean), beanName);
        return bean;
    }

    /** Also here: objects made by a FactoryBean get only this callback, never the one before initialization. */
    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) throws BeansException {
        check(AopUtils.getTargetClass(bean), beanName);
        return bean;
    }

    private void check(Class<?> userClass, String beanName) {
        if (checked.contains(userClass) || !AnnotationUtils.isCandidateClass(userClass, annotationType)) {
            return;
        }
        Set<Method> annotated = MethodIntrospector.selectMethods(userClass,
                (MethodIntrospector.MetadataLookup<A>) method ->
                        AnnotatedElementUtils.findMergedAnnotation(method, annotationType)).keySet();
        String annotation = "@" + annotationType.getSimpleName();
        for (Method method : annotated) {
            String problem = unproxyable(method);
            if (problem != null) {
                throw new DistlockConfigurationException(annotation + " on " + AbstractOperationSource.describe(method)
                        + " in bean '" + beanName + "' would never " + effect + ": the method is " + problem
                        + ", so the Spring proxy cannot intercept it.",
                        "Make the method public (or protected), non-final and non-static, or " + alternative + ".",
                        null);
            }
            checkCanRun(method, beanName);
            O operation;
            try {
                operation = operations.getObject().getOperation(method, userClass);
            }
            catch (IllegalStateException ex) {
                String action = (ex.getCause() instanceof InvalidAnnotationException invalid) ? invalid.action()
                        : "Correct the " + annotation + " annotation of the method named above.";
                throw new DistlockConfigurationException(ex.getMessage() + " (bean '" + beanName + "').", action, ex);
            }
            if (operation != null) {
                checkOperation(method, beanName, operation);
            }
        }
        checked.add(userClass);
    }

    /**
     * Fails when the application lacks what an annotated method needs to run (a lock backend, say), before its
     * annotation is parsed.
     *
     * @throws DistlockConfigurationException naming the method and what to do
     */
    protected abstract void checkCanRun(Method method, String beanName);

    /**
     * Fails when the parsed operation asks for what the application cannot give it; nothing by default.
     *
     * @throws DistlockConfigurationException naming the method and what to do
     */
    protected void checkOperation(Method method, String beanName, O operation) {
    }

    private static String unproxyable(Method method) {
        int modifiers = method.getModifiers();
        if (Modifier.isStatic(modifiers)) {
            return "static";
        }
        if (Modifier.isPrivate(modifiers)) {
            return "private";
        }
        return Modifier.isFinal(modifiers) ? "final" : null;
    }
}

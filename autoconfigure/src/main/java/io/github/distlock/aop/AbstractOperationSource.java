package io.github.distlock.aop;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.MethodClassKey;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.env.PropertyResolver;
import org.springframework.expression.BeanResolver;
import org.springframework.util.ClassUtils;

/**
 * Finds an annotation of a method and parses it into an operation, once per method and target class: what
 * {@link io.github.distlock.DistributedLock} and {@code @Idempotent} share, as Spring's cache abstraction shares
 * {@code AbstractFallbackCacheOperationSource} between its annotation families.
 *
 * <p>This class caches the result (a method without the annotation too), looks the annotation up on the most
 * specific method for the target class before the method called, resolves {@code ${...}} placeholders strictly,
 * compiles key expressions, and names the annotation and the method in every failure. A subclass only reads its
 * annotation's attributes.
 *
 * <p>Internal API of distlock's modules: not for applications.
 *
 * @param <A> the annotation
 * @param <O> what one annotated method is parsed into
 */
public abstract class AbstractOperationSource<A extends Annotation, O> {

    /** Cached for a method without the annotation: a concurrent map holds no {@code null}. */
    private static final Object NONE = new Object();

    private final Map<MethodClassKey, Object> cache = new ConcurrentHashMap<>(64);
    private final ParameterNameDiscoverer parameterNames = new DefaultParameterNameDiscoverer();
    private final Class<A> annotationType;
    private final PropertyResolver placeholders;
    private final BeanResolver beanResolver;

    /**
     * @param annotationType the annotation this source parses
     * @param beanFactory resolves {@code @bean} references in expressions; may be {@code null}
     * @param placeholders resolves {@code ${...}} placeholders, strictly: an unknown one fails; may be {@code null}
     */
    protected AbstractOperationSource(Class<A> annotationType, BeanFactory beanFactory, PropertyResolver placeholders) {
        this.annotationType = annotationType;
        this.placeholders = placeholders;
        this.beanResolver = (beanFactory != null) ? new BeanFactoryResolver(beanFactory) : null;
    }

    /**
     * The operation for {@code method} called on {@code targetClass}, or {@code null} when it has no annotation.
     *
     * @param targetClass the class of the bean the method is called on; may be {@code null}
     * @throws IllegalStateException when the annotation is invalid, naming the annotation and the method; its cause
     * is an {@link InvalidAnnotationException} when the parser knows what to do about it
     */
    @SuppressWarnings("unchecked")
    public final O getOperation(Method method, Class<?> targetClass) {
        MethodClassKey cacheKey = new MethodClassKey(method, targetClass);
        // read first: computeIfAbsent may lock the bin even when the value is there, and this runs on every call
        Object operation = cache.get(cacheKey);
        if (operation == null) {
            operation = cache.computeIfAbsent(cacheKey, key -> find(method, targetClass));
        }
        return (operation != NONE) ? (O) operation : null;
    }

    /** Whether the annotation of {@code method} on {@code targetClass} has been parsed already (for tests). */
    boolean isParsed(Method method, Class<?> targetClass) {
        return cache.containsKey(new MethodClassKey(method, targetClass));
    }

    private Object find(Method method, Class<?> targetClass) {
        Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
        A annotation = AnnotatedElementUtils.findMergedAnnotation(specific, annotationType);
        if (annotation == null && specific != method) {
            annotation = AnnotatedElementUtils.findMergedAnnotation(method, annotationType);
        }
        if (annotation == null) {
            return NONE;
        }
        try {
            return parse(annotation, specific, targetClass);
        }
        catch (IllegalArgumentException ex) {
            throw new IllegalStateException("Invalid " + owner(specific) + ": " + ex.getMessage(), ex);
        }
    }

    /**
     * Parses the annotation of one method.
     *
     * @param annotation the annotation, merged
     * @param method the annotated method, most specific for {@code targetClass}
     * @param targetClass the class of the bean; may be {@code null}
     * @throws IllegalArgumentException when an attribute is invalid, naming the attribute (not the method: it is added
     * here); an {@link InvalidAnnotationException} also says what to do
     */
    protected abstract O parse(A annotation, Method method, Class<?> targetClass);

    /**
     * Compiles a key expression of {@code method}, its placeholders resolved; it names the annotation and the method
     * when it fails at a call.
     *
     * @throws IllegalArgumentException when it does not parse or names a parameter the method lacks
     */
    protected final LockKeyExpression parseKey(String expression, Method method, Class<?> targetClass) {
        return LockKeyExpression.parse(resolvePlaceholders(expression), owner(method), method, targetClass,
                parameterNames(method), beanResolver);
    }

    /** {@code text} with its {@code ${...}} placeholders resolved; an unknown one fails. */
    protected final String resolvePlaceholders(String text) {
        return (placeholders != null && text.contains("${")) ? placeholders.resolveRequiredPlaceholders(text) : text;
    }

    /** The parameter names of {@code method}, or {@code null} when it was compiled without them. */
    protected final String[] parameterNames(Method method) {
        return parameterNames.getParameterNames(method);
    }

    /** Resolves {@code @bean} references in expressions, or {@code null} without a bean factory. */
    protected final BeanResolver beanResolver() {
        return beanResolver;
    }

    /**
     * The name of an operation whose annotation gives none: the bean's class and the method, low-cardinality, for
     * metrics and traces.
     */
    protected static String defaultName(Method method, Class<?> targetClass) {
        Class<?> type = (targetClass != null) ? ClassUtils.getUserClass(targetClass) : method.getDeclaringClass();
        String simpleName = type.getSimpleName();
        return (simpleName.isEmpty() ? type.getName() : simpleName) + "." + method.getName();
    }

    /** How messages name a method: {@code com.example.Orders.place()}. */
    public static String describe(Method method) {
        return method.getDeclaringClass().getName() + "." + method.getName() + "()";
    }

    private String owner(Method method) {
        return "@" + annotationType.getSimpleName() + " on " + describe(method);
    }
}

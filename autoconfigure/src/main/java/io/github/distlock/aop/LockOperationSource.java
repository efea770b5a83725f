package io.github.distlock.aop;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockOptions;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.core.MethodClassKey;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.env.PropertyResolver;
import org.springframework.expression.BeanResolver;

/**
 * Finds the {@link DistributedLock} of a method and parses it into a {@link LockOperation}, once per method and target
 * class.
 */
public class LockOperationSource {

    private static final LockOperation NONE = new LockOperation(null, null, null);

    private final Map<MethodClassKey, LockOperation> cache = new ConcurrentHashMap<>(64);
    private final ParameterNameDiscoverer parameterNames = new DefaultParameterNameDiscoverer();
    private final PropertyResolver placeholders;
    private final BeanResolver beanResolver;
    private final Duration defaultWait;
    private final Duration defaultLease;

    /**
     * @param beanFactory resolves {@code @bean} references; may be {@code null}
     * @param placeholders resolves {@code ${...}} placeholders, strictly: an unknown one fails; may be {@code null}
     * @param defaultWait the wait of an annotation that sets none
     * @param defaultLease the lease of an annotation that sets none; {@code null} or zero for the watchdog
     */
    public LockOperationSource(BeanFactory beanFactory, PropertyResolver placeholders, Duration defaultWait,
            Duration defaultLease) {
        this.placeholders = placeholders;
        this.beanResolver = (beanFactory != null) ? new BeanFactoryResolver(beanFactory) : null;
        this.defaultWait = defaultWait;
        this.defaultLease = (defaultLease != null) ? defaultLease : LockOptions.WATCHDOG;
    }

    /**
     * The operation for {@code method} called on {@code targetClass}, or {@code null} when it has no
     * {@link DistributedLock}.
     *
     * @throws IllegalStateException when the annotation is invalid, naming the method
     */
    LockOperation getOperation(Method method, Class<?> targetClass) {
        MethodClassKey cacheKey = new MethodClassKey(method, targetClass);
        LockOperation operation = cache.get(cacheKey);
        if (operation == null) {
            operation = cache.computeIfAbsent(cacheKey, key -> parse(method, targetClass));
        }
        return (operation != NONE) ? operation : null;
    }

    private LockOperation parse(Method method, Class<?> targetClass) {
        Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
        DistributedLock annotation = AnnotatedElementUtils.findMergedAnnotation(specific, DistributedLock.class);
        if (annotation == null && specific != method) {
            annotation = AnnotatedElementUtils.findMergedAnnotation(method, DistributedLock.class);
        }
        if (annotation == null) {
            return NONE;
        }
        try {
            String expression = resolvePlaceholders(annotation.key());
            LockKeyExpression key = LockKeyExpression.parse(expression, specific, targetClass,
                    parameterNames.getParameterNames(specific), beanResolver);
            LockOptions options = new LockOptions(
                    time("waitTime", annotation.waitTime(), annotation.timeUnit(), defaultWait),
                    time("leaseTime", annotation.leaseTime(), annotation.timeUnit(), defaultLease),
                    annotation.fenced());
            return new LockOperation(specific, key, options);
        }
        catch (IllegalArgumentException ex) {
            throw new IllegalStateException("Invalid @DistributedLock on " + LockOperation.describe(specific) + ": "
                    + ex.getMessage(), ex);
        }
    }

    private String resolvePlaceholders(String expression) {
        if (placeholders != null && expression.contains("${")) {
            return placeholders.resolveRequiredPlaceholders(expression);
        }
        return expression;
    }

    private static Duration time(String attribute, long value, TimeUnit unit, Duration fallback) {
        if (value == DistributedLock.DEFAULT) {
            return fallback;
        }
        if (value < 0) {
            throw new IllegalArgumentException(attribute + " must be >= 0 (or DistributedLock.DEFAULT), was " + value);
        }
        Duration time = Duration.ofNanos(unit.toNanos(value));
        if (!time.isZero() && time.compareTo(Duration.ofMillis(1)) < 0) {
            // Redis counts in milliseconds: a 500 us lease would reach it as "expire now", a lock gone before the body runs
            String zero = attribute.equals("leaseTime") ? "0 (watchdog)" : "0";
            throw new IllegalArgumentException(attribute + " must be " + zero + " or at least 1 ms, was " + value + " " + unit);
        }
        return time;
    }
}

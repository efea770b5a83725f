package io.github.distlock.aop;

import java.lang.reflect.Method;

import org.springframework.expression.BeanResolver;

/**
 * {@link io.github.distlock.DistributedLock}'s key expression ({@code LockKeyExpression}: parsed once, variables checked
 * against the method's parameters at parse time, every part of a {@code +} chain checked for {@code null}/blank at
 * every call, identity {@code toString()}s refused) for other annotations that name a key the same way, such as
 * {@code @Idempotent}.
 *
 * <p>One grammar and one set of checks for every annotation of distlock's modules that names a key. Internal API for
 * those modules: not for applications.
 */
public final class SharedKeyExpression {

    private final LockKeyExpression expression;

    private SharedKeyExpression(LockKeyExpression expression) {
        this.expression = expression;
    }

    /**
     * Parses {@code expression} for {@code method} called on {@code targetClass}.
     *
     * @throws IllegalArgumentException naming the expression (not the method) and, through {@link #action}, what to do
     */
    public static SharedKeyExpression parse(String expression, Method method, Class<?> targetClass,
            String[] parameterNames, BeanResolver beanResolver) {
        return new SharedKeyExpression(LockKeyExpression.parse(expression, method, targetClass, parameterNames,
                beanResolver));
    }

    /**
     * The key of one call: a {@code String}, or a {@code List<String>} when the expression names several.
     *
     * @throws IllegalArgumentException when a part is null or blank, or evaluation fails
     */
    public Object evaluate(Method method, Object[] args, Object target, Class<?> targetClass) {
        return expression.evaluate(method, args, target, targetClass);
    }

    /** The expression as written (placeholders resolved). */
    public String source() {
        return expression.source();
    }

    /** What to do about a parse failure of {@link #parse}, or {@code null} when it says nothing. */
    public static String action(IllegalArgumentException failure) {
        return (failure instanceof LockAnnotationException invalid) ? invalid.action() : null;
    }
}

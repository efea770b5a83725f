package io.github.distlock.idempotent;

import java.lang.reflect.Method;
import java.util.List;

import io.github.distlock.aop.SharedKeyExpression;
import org.springframework.core.ResolvableType;

/**
 * An {@link Idempotent} annotation parsed once: its key (and fingerprint) expressions compiled, its times resolved
 * against the configured defaults, the return type the result is replayed as.
 *
 * @param method the annotated method (most specific for the target class)
 * @param key the key expression
 * @param fingerprint the fingerprint expression, or {@code null}
 * @param options ttl, wait, policy, stored failures and name; no fingerprint (that is per call)
 * @param resultType the method's return type resolved against the target class
 */
record IdempotentOperation(Method method, SharedKeyExpression key, SharedKeyExpression fingerprint,
        IdempotencyOptions options, ResolvableType resultType) {

    /** The key of one call. */
    String evaluateKey(Object[] args, Object target, Class<?> targetClass) {
        Object value = evaluate(key, args, target, targetClass);
        if (value instanceof List<?> several) {
            throw new IllegalArgumentException("@Idempotent on " + describe(method) + ": key '" + key.source()
                    + "' names " + several.size() + " keys " + several + "; an idempotent call has one key");
        }
        return (String) value;
    }

    /** The options of one call: with its fingerprint, when the annotation names one. */
    IdempotencyOptions options(Object[] args, Object target, Class<?> targetClass) {
        if (fingerprint == null) {
            return options;
        }
        Object value = evaluate(fingerprint, args, target, targetClass);
        return options.withFingerprint((value instanceof List<?> parts) ? String.join("\n",
                parts.stream().map(String::valueOf).toList()) : value);
    }

    private Object evaluate(SharedKeyExpression expression, Object[] args, Object target, Class<?> targetClass) {
        try {
            return expression.evaluate(method, args, target, targetClass);
        }
        catch (IllegalArgumentException ex) {
            throw new IllegalArgumentException("@Idempotent on " + describe(method) + ": " + ex.getMessage(), ex);
        }
    }

    static String describe(Method method) {
        return method.getDeclaringClass().getName() + "." + method.getName() + "()";
    }
}

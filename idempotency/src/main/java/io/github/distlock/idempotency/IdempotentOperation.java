package io.github.distlock.idempotency;

import java.lang.reflect.Method;
import java.util.List;

import io.github.distlock.aop.AbstractOperationSource;
import io.github.distlock.aop.LockKeyExpression;
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
 * @param joinsCallerTransaction whether the method's work commits with its caller's transaction: {@code false} when
 * its own {@code @Transactional} suspends that transaction ({@code REQUIRES_NEW}, {@code NOT_SUPPORTED},
 * {@code NEVER}), so its work is committed, or not, when it returns
 */
record IdempotentOperation(Method method, LockKeyExpression key, FingerprintExpression fingerprint,
        IdempotencyOptions options, ResolvableType resultType, boolean joinsCallerTransaction) {

    /** The key of one call. */
    String evaluateKey(Object[] args, Object target, Class<?> targetClass) {
        Object value = key.evaluate(args, target, targetClass);
        if (value instanceof List<?> several) {
            throw new IllegalArgumentException("@Idempotent on " + AbstractOperationSource.describe(method) + ": key '"
                    + key.source() + "' names " + several.size() + " keys " + several
                    + "; an idempotent call has one key");
        }
        return (String) value;
    }

    /** The options of one call: with its fingerprint, when the annotation names one. */
    IdempotencyOptions options(Object[] args, Object target, Class<?> targetClass) {
        if (fingerprint == null) {
            return options;
        }
        Object value;
        try {
            value = fingerprint.evaluate(method, args, target);
        }
        catch (RuntimeException ex) {
            throw new IllegalArgumentException("@Idempotent on " + AbstractOperationSource.describe(method)
                    + ": fingerprint '" + fingerprint.source() + "' could not be evaluated: " + ex.getMessage(), ex);
        }
        // null is a value too (an absent field): empty, so that it is compared rather than skipped
        return options.withFingerprint((value != null) ? value : java.util.Optional.empty());
    }

    /** The fingerprint expression: SpEL over the parameters, evaluated to the value itself (never its text). */
    record FingerprintExpression(String source, org.springframework.expression.Expression expression,
            org.springframework.expression.BeanResolver beanResolver) {

        private static final org.springframework.core.ParameterNameDiscoverer PARAMETER_NAMES =
                new org.springframework.core.DefaultParameterNameDiscoverer();

        Object evaluate(Method method, Object[] args, Object target) {
            org.springframework.context.expression.MethodBasedEvaluationContext context =
                    new org.springframework.context.expression.MethodBasedEvaluationContext(target, method, args,
                            PARAMETER_NAMES);
            if (beanResolver != null) {
                context.setBeanResolver(beanResolver);
            }
            return expression.getValue(context);
        }
    }
}

package io.github.distlock.aop;

import java.lang.reflect.Method;

import io.github.distlock.LockOptions;

/**
 * A {@link io.github.distlock.DistributedLock} annotation parsed once: its key expression compiled, its times resolved
 * against the configured defaults.
 *
 * @param method the annotated method (most specific for the target class)
 * @param key the compiled key expression
 * @param options wait, lease and fencing, with defaults already applied
 */
record LockOperation(Method method, LockKeyExpression key, LockOptions options) {

    /** Evaluates the key (without prefix) for one call. */
    String evaluateKey(Object[] args, Object target, Class<?> targetClass) {
        try {
            return key.evaluate(method, args, target, targetClass);
        }
        catch (IllegalArgumentException ex) {
            throw new IllegalArgumentException("@DistributedLock on " + describe(method) + ": " + ex.getMessage(), ex);
        }
    }

    static String describe(Method method) {
        return method.getDeclaringClass().getName() + "." + method.getName() + "()";
    }
}

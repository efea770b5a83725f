package io.github.distlock.aop;

import java.lang.reflect.Method;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockOptions;

/**
 * A {@link io.github.distlock.DistributedLock} annotation parsed once: its key expression compiled, its times resolved
 * against the configured defaults, the shape of the method's result and what to do when the lock can't be had.
 *
 * @param method the annotated method (most specific for the target class)
 * @param key the compiled key expression
 * @param options wait, lease, fencing, type and minimum hold, with defaults already applied
 * @param shape how the method delivers its result, which decides how long the lock is held
 * @param skipIfLocked return "nothing" instead of failing when the lock can't be had
 * @param fallback the method to run instead when the lock can't be had, or {@code null}
 * @param fallbackTakesException whether the fallback takes the {@link LockAcquisitionException} as a last argument
 */
record LockOperation(Method method, LockKeyExpression key, LockOptions options, Shape shape, boolean skipIfLocked,
        Method fallback, boolean fallbackTakesException) {

    /** How a method delivers its result. */
    enum Shape {
        /** Returns it: the lock is held until the method returns or throws. */
        SYNC,
        /** Returns a {@code CompletionStage}: held until the stage completes. */
        STAGE,
        /** Returns a {@code Mono}: held from subscription until it terminates or is cancelled. */
        MONO,
        /** Returns a {@code Flux}: likewise. */
        FLUX,
        /** Returns a Kotlin {@code Flow}: held like a {@code Flux}, from collection until it ends. */
        FLOW
    }

    /** Evaluates the key (without prefix) for one call: a {@code String} or a {@code List<String>}. */
    Object evaluateKey(Object[] args, Object target, Class<?> targetClass) {
        return key.evaluate(args, target, targetClass);
    }

    /** Whether "not acquired" is answered by this method instead of an exception. */
    boolean handlesNotAcquired() {
        return skipIfLocked || fallback != null;
    }

    /**
     * What the call returns when the lock could not be had: the skip value, or the fallback's result (run on the
     * target, not through the proxy: it takes no lock of its own).
     */
    Object notAcquired(Object target, Object[] args, LockAcquisitionException cause) throws Throwable {
        if (fallback == null) {
            return emptyResult();
        }
        Object[] fallbackArgs = args;
        if (fallbackTakesException) {
            fallbackArgs = java.util.Arrays.copyOf(args, args.length + 1);
            fallbackArgs[args.length] = cause;
        }
        if (CoroutineLocking.isSuspending(fallback)) {
            if (fallbackTakesException) {
                // a suspend function's continuation stays last: the exception goes before it
                fallbackArgs[args.length] = args[args.length - 1];
                fallbackArgs[args.length - 1] = cause;
            }
            return CoroutineLocking.invokeSuspending(fallback, target, fallbackArgs);
        }
        try {
            return fallback.invoke(target, fallbackArgs);
        }
        catch (java.lang.reflect.InvocationTargetException ex) {
            throw ex.getTargetException();
        }
    }

    /** The value a skipped call returns. */
    Object emptyResult() {
        Class<?> type = method.getReturnType();
        if (type == Optional.class) {
            return Optional.empty();
        }
        return switch (shape) {
            case STAGE -> CompletableFuture.completedFuture(null);
            case MONO, FLUX -> ReactiveLocking.empty(shape);
            case FLOW -> ReactiveLocking.empty(LockOperation.Shape.FLUX);
            case SYNC -> null;
        };
    }

    static String describe(Method method) {
        return AbstractOperationSource.describe(method);
    }
}

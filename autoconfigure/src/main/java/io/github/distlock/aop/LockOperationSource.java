package io.github.distlock.aop;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.github.distlock.DistributedLock;
import io.github.distlock.LeaseLostPolicy;
import io.github.distlock.LockOptions;
import io.github.distlock.spi.LockDurations;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.env.PropertyResolver;
import org.springframework.util.ReflectionUtils;

/**
 * Finds the {@link DistributedLock} of a method and parses it into a {@link LockOperation}, once per method and target
 * class (the caching, placeholders and key expression are {@link AbstractOperationSource}'s).
 */
public class LockOperationSource extends AbstractOperationSource<DistributedLock, LockOperation> {

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
        super(DistributedLock.class, beanFactory, placeholders);
        this.defaultWait = defaultWait;
        this.defaultLease = (defaultLease != null) ? defaultLease : LockOptions.WATCHDOG;
    }

    @Override
    protected LockOperation parse(DistributedLock annotation, Method specific, Class<?> targetClass) {
        LockKeyExpression key = parseKey(annotation.key(), specific, targetClass);
        Duration holdAtLeast = time("holdAtLeast", annotation.holdAtLeast(), 0, annotation.holdAtLeastString(),
                annotation.timeUnit(), null);
        String name = annotation.name().isBlank() ? defaultName(specific, targetClass) : annotation.name().strip();
        LockOptions options = new LockOptions(
                time("waitTime", annotation.waitTime(), DistributedLock.DEFAULT, annotation.waitTimeString(),
                        annotation.timeUnit(), defaultWait),
                time("leaseTime", annotation.leaseTime(), DistributedLock.DEFAULT, annotation.leaseTimeString(),
                        annotation.timeUnit(), defaultLease),
                annotation.fenced(), annotation.type(), holdAtLeast, name, annotation.permits(),
                annotation.onLeaseLost());
        LockOperation.Shape shape = shape(specific);
        checkLeaseLostPolicy(annotation.onLeaseLost(), shape, specific);
        if (annotation.fenced() && shape != LockOperation.Shape.SYNC && shape != LockOperation.Shape.STAGE) {
            throw new InvalidAnnotationException("fenced = true is not supported on a "
                    + (CoroutineLocking.isSuspending(specific) ? "suspend" : shape) + " method: reactive code "
                    + "cannot read LockContext's thread-bound token; use LockTemplate.acquireAsync and "
                    + "HeldLock.fencingToken()", "Remove fenced = true, or lock with LockTemplate.acquireAsync and pass HeldLock.fencingToken() on");
        }
        Method fallback = null;
        boolean fallbackTakesException = false;
        if (!annotation.fallbackMethod().isEmpty()) {
            if (annotation.skipIfLocked()) {
                throw new InvalidAnnotationException("skipIfLocked and fallbackMethod exclude each other: choose one", "Keep skipIfLocked = true or fallbackMethod, not both");
            }
            fallback = fallbackMethod(specific, targetClass, annotation.fallbackMethod());
            fallbackTakesException = fallback.getParameterCount() > specific.getParameterCount();
        }
        else if (annotation.skipIfLocked() && specific.getReturnType().isPrimitive()
                && specific.getReturnType() != void.class) {
            throw new InvalidAnnotationException("skipIfLocked on a method returning " + specific.getReturnType()
                    + ": a skipped call has nothing to return; return void, a wrapper type, Optional, a "
                    + "CompletableFuture, or use fallbackMethod", "Return void, a wrapper type, Optional or a CompletableFuture, or name a fallbackMethod");
        }
        return new LockOperation(specific, key, options, shape, annotation.skipIfLocked(), fallback,
                fallbackTakesException);
    }

    /** Refuses a policy the method's result can't be stopped with. */
    private static void checkLeaseLostPolicy(LeaseLostPolicy policy, LockOperation.Shape shape, Method method) {
        if (policy == LeaseLostPolicy.INTERRUPT && shape != LockOperation.Shape.SYNC) {
            throw new InvalidAnnotationException("onLeaseLost = INTERRUPT on a "
                    + (CoroutineLocking.isSuspending(method) ? "suspend function"
                            : "method returning " + method.getReturnType().getSimpleName()) + ": its work runs on threads the lock does not know once "
                    + "the method has returned, and interrupting the caller's thread would hit whatever it does next",
                    "Use onLeaseLost = CANCEL, which cancels the returned future or disposes the subscription");
        }
        if (policy == LeaseLostPolicy.CANCEL && method.getReturnType() == java.util.concurrent.CompletionStage.class) {
            throw new InvalidAnnotationException("onLeaseLost = CANCEL on a method declared to return CompletionStage, "
                    + "which need not be cancellable", "Declare the method to return CompletableFuture");
        }
    }

    /** How the method delivers its result; a result type whose end the lock can't observe fails the startup. */
    private static LockOperation.Shape shape(Method method) {
        LockOperation.Shape coroutine = CoroutineLocking.shape(method);
        if (coroutine != null) {
            return coroutine;
        }
        Class<?> type = method.getReturnType();
        if (type == CompletionStage.class || type == CompletableFuture.class) {
            return LockOperation.Shape.STAGE;
        }
        if (ReactiveLocking.isMono(type)) {
            return LockOperation.Shape.MONO;
        }
        if (ReactiveLocking.isFlux(type)) {
            return LockOperation.Shape.FLUX;
        }
        if (Future.class.isAssignableFrom(type) || CompletionStage.class.isAssignableFrom(type)
                || ReactiveLocking.isOtherPublisher(type)) {
            throw new InvalidAnnotationException("the method returns " + type.getName() + ", whose completion the lock "
                    + "cannot follow (it would be released when the method returns, before the work is done); return "
                    + "CompletableFuture, CompletionStage, Mono or Flux", "Return CompletableFuture, CompletionStage, Mono or Flux, or do the work before returning");
        }
        return LockOperation.Shape.SYNC;
    }

    /** The fallback of {@code method}: same parameters (plus, optionally, the exception), a compatible result. */
    private static Method fallbackMethod(Method method, Class<?> targetClass, String name) {
        Class<?> owner = (targetClass != null) ? targetClass : method.getDeclaringClass();
        Class<?>[] parameters = method.getParameterTypes();
        Class<?>[] withException = java.util.Arrays.copyOf(parameters, parameters.length + 1);
        withException[parameters.length] = io.github.distlock.LockAcquisitionException.class;
        if (CoroutineLocking.isSuspending(method)) {
            // a suspend fallback's continuation is its last parameter: the exception comes before it
            withException[parameters.length] = parameters[parameters.length - 1];
            withException[parameters.length - 1] = io.github.distlock.LockAcquisitionException.class;
        }
        Method fallback = ReflectionUtils.findMethod(owner, name, parameters);
        if (fallback == null) {
            fallback = ReflectionUtils.findMethod(owner, name, withException);
        }
        String expected = name + "(" + java.util.Arrays.stream(parameters).map(Class::getSimpleName)
                .collect(java.util.stream.Collectors.joining(", ")) + "[, LockAcquisitionException])";
        if (fallback == null) {
            throw new InvalidAnnotationException("fallbackMethod '" + name + "' not found in " + owner.getName()
                    + ": expected " + expected + " returning " + method.getReturnType().getSimpleName(), "Add the fallback method to the bean with the same parameters (optionally plus a LockAcquisitionException) and a compatible return type, or correct fallbackMethod");
        }
        if (!org.springframework.util.ClassUtils.resolvePrimitiveIfNecessary(method.getReturnType())
                .isAssignableFrom(org.springframework.util.ClassUtils.resolvePrimitiveIfNecessary(fallback.getReturnType()))) {
            throw new InvalidAnnotationException("fallbackMethod " + LockOperation.describe(fallback) + " returns "
                    + fallback.getReturnType().getName() + ", which " + LockOperation.describe(method)
                    + " cannot return (it returns " + method.getReturnType().getName() + ")", "Make the fallback return what the annotated method returns");
        }
        if (java.lang.reflect.Modifier.isStatic(fallback.getModifiers())) {
            throw new InvalidAnnotationException("fallbackMethod " + LockOperation.describe(fallback) + " is static; "
                    + "make it an instance method of the bean", "Make the fallback an instance method of the bean");
        }
        ReflectionUtils.makeAccessible(fallback);
        return fallback;
    }

    /**
     * A time given as a number ({@code attribute}) or as a duration string ({@code attribute + "String"}), not both:
     * {@code waitTime = 2, waitTimeString = "5s"} would leave the reader guessing which one counts.
     */
    private Duration time(String attribute, long number, long unset, String text, TimeUnit unit, Duration fallback) {
        if (text.isEmpty()) {
            return (number == unset && unset == 0) ? null : time(attribute, number, unset, unit, fallback);
        }
        if (number != unset) {
            throw new InvalidAnnotationException(attribute + " = " + number + " and " + attribute + "String = \"" + text
                    + "\" are both set", "Set one of " + attribute + " and " + attribute + "String");
        }
        String resolved = resolvePlaceholders(text).trim();
        Duration duration;
        try {
            duration = DurationStyle.detectAndParse(resolved, unit.toChronoUnit());
        }
        catch (IllegalArgumentException ex) {
            throw new InvalidAnnotationException(attribute + "String = \"" + text + "\" is not a duration" + (resolved.equals(text)
                    ? "" : " (resolved: \"" + resolved + "\")"), "Write a duration such as \"2s\", \"500ms\" or \"PT2S\"", ex);
        }
        if (duration.isNegative()) {
            throw new InvalidAnnotationException(attribute + "String = \"" + text + "\" is negative",
                    "Use 0 or a positive duration");
        }
        if (!duration.isZero() && duration.compareTo(Duration.ofMillis(1)) < 0) {
            throw new InvalidAnnotationException(attribute + "String = \"" + text + "\" is below 1 ms",
                    "Use 0 or at least one millisecond (Redis counts leases in milliseconds)");
        }
        return duration;
    }

    private static Duration time(String attribute, long value, long unset, TimeUnit unit, Duration fallback) {
        // DEFAULT (-1) means "the configured default" only where it is the attribute's own default (wait and lease);
        // holdAtLeast has none, so -1 there is a negative hold like any other
        if (value == unset && unset == DistributedLock.DEFAULT) {
            return fallback;
        }
        if (value < 0) {
            throw new InvalidAnnotationException(attribute + " must be >= 0" + ((unset == DistributedLock.DEFAULT)
                    ? " (or DistributedLock.DEFAULT)" : "") + ", was " + value, (unset == DistributedLock.DEFAULT)
                    ? "Use a value >= 0, or leave the attribute out for the configured default"
                    : "Use a value >= 0, or leave the attribute out for none");
        }
        // saturating: Long.MAX_VALUE of any unit is FOR_EVER, never an overflow
        Duration time = LockDurations.toDuration(value, unit);
        if (!time.isZero() && time.compareTo(Duration.ofMillis(1)) < 0) {
            // Redis counts in milliseconds: a 500 us lease would reach it as "expire now", a lock gone before the body runs
            String zero = attribute.equals("leaseTime") ? "0 (watchdog)" : "0";
            throw new InvalidAnnotationException(attribute + " must be " + zero + " or at least 1 ms, was " + value + " " + unit, "Use 0 or at least one millisecond (Redis counts leases in milliseconds)");
        }
        return time;
    }
}

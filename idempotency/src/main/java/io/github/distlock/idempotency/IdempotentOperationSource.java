package io.github.distlock.idempotency;

import java.lang.reflect.Method;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;

import io.github.distlock.aop.AbstractOperationSource;
import io.github.distlock.aop.InvalidAnnotationException;
import io.github.distlock.aop.LockKeyExpression;
import io.github.distlock.spi.LockDurations;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.ResolvableType;
import org.springframework.core.env.PropertyResolver;
import org.springframework.util.ClassUtils;

/**
 * Finds the {@link Idempotent} of a method and parses it into an {@link IdempotentOperation}, once per method and
 * target class (the caching, placeholders and key expression are {@link AbstractOperationSource}'s).
 */
public class IdempotentOperationSource extends AbstractOperationSource<Idempotent, IdempotentOperation> {

    private final Duration defaultTtl;

    /**
     * @param beanFactory resolves {@code @bean} references in expressions; may be {@code null}
     * @param placeholders resolves {@code ${...}}, strictly; may be {@code null}
     * @param defaultTtl the mark lifetime of an annotation that sets none
     */
    public IdempotentOperationSource(BeanFactory beanFactory, PropertyResolver placeholders, Duration defaultTtl) {
        super(Idempotent.class, beanFactory, placeholders);
        this.defaultTtl = defaultTtl;
    }

    @Override
    protected IdempotentOperation parse(Idempotent annotation, Method specific, Class<?> targetClass) {
        LockKeyExpression key = parseKey(annotation.key(), specific, targetClass);
        IdempotentOperation.FingerprintExpression fingerprint = annotation.fingerprint().isBlank() ? null
                : fingerprint(resolvePlaceholders(annotation.fingerprint()), specific, parameterNames(specific));
        Duration ttl = duration("ttl", annotation.ttl(), defaultTtl);
        if (ttl.compareTo(Duration.ofMillis(1)) < 0) {
            throw new InvalidAnnotationException("ttl = \"" + annotation.ttl() + "\" must be at least 1 ms",
                    "Give the mark a lifetime longer than the longest time a client may retry, e.g. ttl = \"24h\"");
        }
        Duration waitTime = duration("waitTime", annotation.waitTime(), null);
        if (waitTime != null && annotation.whileRunning() == WhileRunning.REFUSE) {
            throw new InvalidAnnotationException("waitTime = \"" + annotation.waitTime() + "\" is set but "
                    + "whileRunning = REFUSE never waits", "Remove waitTime, or use whileRunning = WAIT");
        }
        String name = annotation.name().isBlank() ? defaultName(specific, targetClass) : annotation.name().strip();
        IdempotencyOptions options = new IdempotencyOptions(ttl, waitTime, annotation.whileRunning(),
                List.of(annotation.storeFailureFor()), null, name);
        return new IdempotentOperation(specific, key, fingerprint, options, resultType(specific, targetClass),
                joinsCallerTransaction(specific, targetClass));
    }

    /**
     * The fingerprint expression, parsed; when it names one parameter ({@code #request}, {@code #p0}), that
     * parameter's declared type is checked now: a type with no content to compare fails the startup.
     */
    private IdempotentOperation.FingerprintExpression fingerprint(String source, Method method, String[] names) {
        org.springframework.expression.Expression expression;
        try {
            expression = new org.springframework.expression.spel.standard.SpelExpressionParser()
                    .parseExpression(source);
        }
        catch (org.springframework.expression.ParseException ex) {
            throw new InvalidAnnotationException("fingerprint = \"" + source + "\" is not a valid SpEL expression: "
                    + ex.getMessage(), "Write the fingerprint as a SpEL expression over the parameters, e.g. "
                    + "fingerprint = \"#request\"", ex);
        }
        java.util.regex.Matcher parameter = java.util.regex.Pattern.compile("#(?:[pa](\\d+)|(\\w+))")
                .matcher(source.strip());
        if (parameter.matches()) {
            int index = -1;
            if (parameter.group(1) != null) {
                index = Integer.parseInt(parameter.group(1));
            }
            else if (names != null) {
                index = java.util.Arrays.asList(names).indexOf(parameter.group(2));
            }
            if (index < 0 && parameter.group(2) != null && names != null) {
                throw new InvalidAnnotationException("fingerprint = \"" + source + "\" names no parameter of the "
                        + "method (its parameters: " + String.join(", ", names) + ")",
                        "Name a parameter of the method, e.g. fingerprint = \"#" + names[0] + "\"");
            }
            if (index >= method.getParameterCount()) {
                throw new InvalidAnnotationException("fingerprint = \"" + source + "\" names parameter " + index
                        + " of a method with " + method.getParameterCount(), "Name a parameter of the method");
            }
            if (index >= 0) {
                String problem = RequestFingerprint.unfingerprintable(method.getParameterTypes()[index]);
                if (problem != null) {
                    throw new InvalidAnnotationException("fingerprint = \"" + source + "\" cannot be fingerprinted: "
                            + problem, "Fingerprint the request's content: a record, a class with fields, a map, "
                            + "or a value such as a String or a number");
                }
            }
        }
        return new IdempotentOperation.FingerprintExpression(source, expression, beanResolver());
    }

    /**
     * Whether the method's own work commits with the transaction of its caller: not when its {@code @Transactional}
     * suspends that transaction, since then the work is committed before the advice sees the method return.
     */
    private static boolean joinsCallerTransaction(Method method, Class<?> targetClass) {
        if (!ClassUtils.isPresent("org.springframework.transaction.annotation.AnnotationTransactionAttributeSource",
                IdempotentOperationSource.class.getClassLoader())) {
            return true;
        }
        return TransactionAttributes.joinsCaller(method, targetClass);
    }

    /** Only loaded when spring-tx is on the class path. */
    private static final class TransactionAttributes {

        static boolean joinsCaller(Method method, Class<?> targetClass) {
            org.springframework.transaction.interceptor.TransactionAttribute attribute =
                    new org.springframework.transaction.annotation.AnnotationTransactionAttributeSource(false)
                            .getTransactionAttribute(method, targetClass);
            if (attribute == null) {
                return true;
            }
            int propagation = attribute.getPropagationBehavior();
            return propagation != org.springframework.transaction.TransactionDefinition.PROPAGATION_REQUIRES_NEW
                    && propagation != org.springframework.transaction.TransactionDefinition.PROPAGATION_NOT_SUPPORTED
                    && propagation != org.springframework.transaction.TransactionDefinition.PROPAGATION_NEVER;
        }
    }

    /** What the result is replayed as; a type that can't be, or a result the call does not wait for, fails. */
    private static ResolvableType resultType(Method method, Class<?> targetClass) {
        ResolvableType type = ResolvableType.forMethodReturnType(method, (targetClass != null) ? targetClass
                : method.getDeclaringClass());
        Class<?> raw = type.resolve();
        if (raw == null || type.hasUnresolvableGenerics()) {
            throw new InvalidAnnotationException("the return type " + type + " cannot be resolved, so a duplicate "
                    + "could not get the stored result back as it", "Declare a concrete return type (generics included)");
        }
        if (Future.class.isAssignableFrom(raw) || CompletionStage.class.isAssignableFrom(raw)
                || isPublisher(raw)) {
            throw new InvalidAnnotationException("the method returns " + raw.getName() + ": an idempotent call must "
                    + "finish before it returns (its mark is written then), so asynchronous results are not supported",
                    "Return the value itself, or use IdempotencyTemplate around the blocking part");
        }
        if (isDeferredWork(raw)) {
            // the work runs after the method returned, when the caller calls it: marked done at the return, a retry
            // of work that then failed (or never ran) would be refused as a duplicate
            throw new InvalidAnnotationException("the method returns " + raw.getName() + ", work that runs after the "
                    + "method returned: an idempotent call must finish before it returns (its mark is written then), so "
                    + "deferred work is not supported",
                    "Return the value itself, and put @Idempotent on the method that does the work");
        }
        if (raw == Object.class) {
            throw new InvalidAnnotationException("the method returns Object: a duplicate would get the stored result "
                    + "back as a JSON map, not as the type the first call returned",
                    "Declare the type the method returns (records and Jackson-readable classes replay as themselves)");
        }
        return type;
    }

    /** Work handed back to be run later: by the caller, or by Spring MVC as an asynchronous request. */
    private static boolean isDeferredWork(Class<?> type) {
        return Callable.class.isAssignableFrom(type) || Runnable.class.isAssignableFrom(type)
                || java.util.function.Supplier.class.isAssignableFrom(type)
                || isAny(type, "org.springframework.web.context.request.async.WebAsyncTask",
                        "org.springframework.web.context.request.async.DeferredResult",
                        "org.springframework.web.servlet.mvc.method.annotation.ResponseBodyEmitter",
                        "org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody");
    }

    private static boolean isPublisher(Class<?> type) {
        return isAny(type, "org.reactivestreams.Publisher", "java.util.concurrent.Flow$Publisher");
    }

    /** Whether {@code type} is one of the named types that are on its class path. */
    private static boolean isAny(Class<?> type, String... names) {
        for (String name : names) {
            try {
                if (ClassUtils.forName(name, type.getClassLoader()).isAssignableFrom(type)) {
                    return true;
                }
            }
            catch (ClassNotFoundException | LinkageError ex) {
                // not on the class path: nothing returns it
            }
        }
        return false;
    }

    private Duration duration(String attribute, String text, Duration fallback) {
        if (text.isBlank()) {
            return fallback;
        }
        String resolved = resolvePlaceholders(text).strip();
        Duration duration;
        try {
            duration = DurationStyle.detectAndParse(resolved, ChronoUnit.SECONDS);
        }
        catch (IllegalArgumentException ex) {
            throw new InvalidAnnotationException(attribute + " = \"" + text + "\" is not a duration"
                    + (resolved.equals(text) ? "" : " (resolved: \"" + resolved + "\")"),
                    "Write a duration such as \"24h\", \"30s\" or \"PT10M\"", ex);
        }
        if (duration.isNegative() || (!duration.isZero() && duration.compareTo(Duration.ofMillis(1)) < 0)) {
            throw new InvalidAnnotationException(attribute + " = \"" + text + "\" must be 0 or at least 1 ms",
                    "Use 0 or a duration of at least one millisecond");
        }
        // "9223372036854775807s" parses (a Duration holds it) but no store or lock counts it: for ever is FOR_EVER
        return LockDurations.capped(duration);
    }
}

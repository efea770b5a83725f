package io.github.distlock.idempotent;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;

import io.github.distlock.DistlockConfigurationException;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.util.ClassUtils;

/**
 * Checks every bean's {@link Idempotent} methods when the bean is created, so that mistakes fail the startup naming
 * the method: an invalid key, fingerprint or duration, a return type that can't be replayed, a method the proxy can't
 * intercept, and no lock backend or mark store to run it on. Parsing here also fills the operation cache.
 */
public class IdempotentMethodValidator implements BeanPostProcessor {

    private final ObjectProvider<IdempotentOperationSource> operations;
    private final BooleanSupplier lockingAvailable;
    private final BooleanSupplier storeAvailable;
    private final Set<Class<?>> checked = ConcurrentHashMap.newKeySet();

    /**
     * @param operations looked up lazily
     * @param lockingAvailable whether a {@link io.github.distlock.LockTemplate} exists (asked without creating it)
     * @param storeAvailable whether an {@link IdempotencyStore} exists (likewise)
     */
    public IdempotentMethodValidator(ObjectProvider<IdempotentOperationSource> operations,
            BooleanSupplier lockingAvailable, BooleanSupplier storeAvailable) {
        this.operations = operations;
        this.lockingAvailable = lockingAvailable;
        this.storeAvailable = storeAvailable;
    }

    @Override
    public Object postProcessBeforeInitialization(Object bean, String beanName) {
        check(ClassUtils.getUserClass(bean), beanName);
        return bean;
    }

    /** Also here: objects made by a FactoryBean get only this callback. */
    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) {
        check(AopUtils.getTargetClass(bean), beanName);
        return bean;
    }

    private void check(Class<?> userClass, String beanName) {
        if (checked.contains(userClass) || !AnnotationUtils.isCandidateClass(userClass, Idempotent.class)) {
            return;
        }
        Set<Method> annotated = MethodIntrospector.selectMethods(userClass,
                (MethodIntrospector.MetadataLookup<Idempotent>) method ->
                        AnnotatedElementUtils.findMergedAnnotation(method, Idempotent.class)).keySet();
        for (Method method : annotated) {
            String where = "@Idempotent on " + IdempotentOperation.describe(method) + " in bean '" + beanName + "'";
            String problem = unproxyable(method);
            if (problem != null) {
                throw new DistlockConfigurationException(where + " would never apply: the method is " + problem
                        + ", so the Spring proxy cannot intercept it.",
                        "Make the method public (or protected), non-final and non-static, or use IdempotencyTemplate.",
                        null);
            }
            if (!lockingAvailable.getAsBoolean()) {
                throw new DistlockConfigurationException(where + " cannot run: no lock backend is configured (no "
                        + "LockTemplate), and a first call runs under the key's lock.",
                        "Configure a distlock backend (Redis through spring.data.redis.*, or distlock.backend), or "
                        + "remove @Idempotent.", null);
            }
            if (!storeAvailable.getAsBoolean()) {
                throw new DistlockConfigurationException(where + " cannot run: there is no store for its marks "
                        + "(no IdempotencyStore bean). distlock stores them in Redis, through the RedissonClient bean, "
                        + "and there is none (the lock backend is not Redis, or there are several clients).",
                        "Give the application a RedissonClient bean (spring.data.redis.* with the Redis backend), or "
                        + "declare an IdempotencyStore bean that keeps the marks elsewhere (its database, say).", null);
            }
            try {
                operations.getObject().getOperation(method, userClass);
            }
            catch (IllegalStateException ex) {
                String action = (ex.getCause() instanceof IdempotentOperationSource.InvalidAnnotation invalid)
                        ? invalid.action() : "Correct the @Idempotent annotation of the method named above.";
                throw new DistlockConfigurationException(ex.getMessage() + " (bean '" + beanName + "').", action, ex);
            }
        }
        checked.add(userClass);
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

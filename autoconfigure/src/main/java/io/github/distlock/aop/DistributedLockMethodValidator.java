package io.github.distlock.aop;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiPredicate;
import java.util.function.BooleanSupplier;

import io.github.distlock.DistlockConfigurationException;
import io.github.distlock.LockType;

import io.github.distlock.DistributedLock;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.util.ClassUtils;

/**
 * Checks every bean's {@link DistributedLock} methods when the bean is created, so that mistakes fail the startup
 * instead of the first call: a key that does not parse or names a parameter the method lacks, negative times, and
 * methods a Spring proxy cannot intercept (private, static or final: their annotation would silently do nothing).
 * Parsing here also fills the operation cache, so the first call does no parsing.
 */
public class DistributedLockMethodValidator implements BeanPostProcessor {

    private final ObjectProvider<LockOperationSource> operations;
    private final BooleanSupplier lockingAvailable;
    private final BiPredicate<LockType, Boolean> supported;

    /**
     * @param operations looked up lazily: a post-processor's dependencies would otherwise be created before
     * configuration properties can be bound
     * @param lockingAvailable whether a {@link io.github.distlock.LockTemplate} (so a lock backend) exists; asked
     * without creating anything
     */
    public DistributedLockMethodValidator(ObjectProvider<LockOperationSource> operations, BooleanSupplier lockingAvailable) {
        this(operations, lockingAvailable, (type, fenced) -> true);
    }

    /**
     * @param operations looked up lazily (see above)
     * @param lockingAvailable whether a lock backend exists (see above)
     * @param supported whether the backend can take a lock of a type, fenced or not
     */
    public DistributedLockMethodValidator(ObjectProvider<LockOperationSource> operations, BooleanSupplier lockingAvailable,
            BiPredicate<LockType, Boolean> supported) {
        this(operations, lockingAvailable, supported, null);
    }

    /**
     * @param operations looked up lazily (see above)
     * @param lockingAvailable whether a lock backend exists (see above)
     * @param supported whether the backend can take a lock of a type, fenced or not
     * @param chosenBackend the value of {@code distlock.backend}, or {@code null}: named in the report when the
     * chosen backend is not configured
     */
    public DistributedLockMethodValidator(ObjectProvider<LockOperationSource> operations, BooleanSupplier lockingAvailable,
            BiPredicate<LockType, Boolean> supported, String chosenBackend) {
        this(operations, lockingAvailable, supported, chosenBackend, () -> true);
    }

    /**
     * @param operations looked up lazily (see above)
     * @param lockingAvailable whether a lock backend exists (see above)
     * @param supported whether the backend can take a lock of a type, fenced or not
     * @param chosenBackend the value of {@code distlock.backend} (see above)
     * @param permitsSupported whether the backend can take locks with more than one permit
     */
    public DistributedLockMethodValidator(ObjectProvider<LockOperationSource> operations, BooleanSupplier lockingAvailable,
            BiPredicate<LockType, Boolean> supported, String chosenBackend, BooleanSupplier permitsSupported) {
        this.permitsSupported = permitsSupported;
        this.operations = operations;
        this.lockingAvailable = lockingAvailable;
        this.supported = supported;
        this.chosenBackend = chosenBackend;
    }

    private final String chosenBackend;

    private final BooleanSupplier permitsSupported;

    /** The values of {@code distlock.backend}. */
    private static final List<String> KNOWN_BACKENDS = List.of("redis", "jdbc", "zookeeper", "etcd");

    /** Classes already checked: prototypes and repeated factory products are scanned once. */
    private final Set<Class<?>> checked = ConcurrentHashMap.newKeySet();

    @Override
    public Object postProcessBeforeInitialization(Object bean, String beanName) throws BeansException {
        check(ClassUtils.getUserClass(bean), beanName);
        return bean;
    }

    /** Also here: objects made by a FactoryBean get only this callback, never the one before initialization. */
    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) throws BeansException {
        check(AopUtils.getTargetClass(bean), beanName);
        return bean;
    }

    private void check(Class<?> userClass, String beanName) {
        if (checked.contains(userClass) || !AnnotationUtils.isCandidateClass(userClass, DistributedLock.class)) {
            return;
        }
        Map<Method, DistributedLock> annotated = MethodIntrospector.selectMethods(userClass,
                (MethodIntrospector.MetadataLookup<DistributedLock>) method ->
                        AnnotatedElementUtils.findMergedAnnotation(method, DistributedLock.class));
        for (Method method : annotated.keySet()) {
            String problem = unproxyable(method);
            if (problem != null) {
                throw new DistlockConfigurationException("@DistributedLock on " + LockOperation.describe(method)
                        + " in bean '" + beanName + "' would never take a lock: the method is " + problem
                        + ", so the Spring proxy cannot intercept it.",
                        "Make the method public (or protected), non-final and non-static, or lock with LockTemplate.", null);
            }
            if (!lockingAvailable.getAsBoolean()) {
                if (chosenBackend != null && !KNOWN_BACKENDS.contains(chosenBackend.strip().toLowerCase(java.util.Locale.ROOT))) {
                    throw new DistlockConfigurationException("@DistributedLock on " + LockOperation.describe(method)
                            + " cannot take a lock: distlock.backend=" + chosenBackend + " names no backend distlock has.",
                            "Set distlock.backend to one of " + String.join(", ", KNOWN_BACKENDS) + ", or remove it to "
                            + "use the one backend that is configured.", null);
                }
                if (chosenBackend != null) {
                    throw new DistlockConfigurationException("@DistributedLock on " + LockOperation.describe(method)
                            + " cannot take a lock: distlock.backend=" + chosenBackend + " chooses a backend that is "
                            + "not configured (no LockProvider bean, so no LockTemplate).",
                            "Give the chosen backend its module and its client: redis needs org.redisson:redisson and "
                            + "spring-boot-data-redis (the distlock starter brings both); jdbc needs distlock-jdbc and a "
                            + "DataSource bean; zookeeper needs distlock-zookeeper and distlock.zookeeper.connect-string "
                            + "or a CuratorFramework bean; etcd needs distlock-etcd and distlock.etcd.endpoints or a "
                            + "jetcd Client bean. Or choose a configured backend with distlock.backend.", null);
                }
                throw new DistlockConfigurationException("@DistributedLock on " + LockOperation.describe(method)
                        + " cannot take a lock: no lock backend is configured (no LockProvider bean, so no LockTemplate).",
                        "Configure Redis with spring.data.redis.* (the distlock starter brings org.redisson:redisson "
                        + "and spring-boot-data-redis, which distlock needs on the class path), or declare a "
                        + "LockProvider bean. Setting distlock.enabled=false instead runs every @DistributedLock method "
                        + "WITHOUT a lock.", null);
            }
            LockOperation operation;
            try {
                operation = operations.getObject().getOperation(method, userClass);
            }
            catch (IllegalStateException ex) {
                String action = (ex.getCause() instanceof LockAnnotationException invalid) ? invalid.action()
                        : "Correct the @DistributedLock annotation of the method named above.";
                throw new DistlockConfigurationException(ex.getMessage() + " (bean '" + beanName + "').", action, ex);
            }
            if (operation != null && !supported.test(operation.options().type(), operation.options().fenced())) {
                throw new DistlockConfigurationException("Invalid @DistributedLock on " + LockOperation.describe(method)
                        + " in bean '" + beanName + "': the lock backend cannot take " + (operation.options().fenced()
                        ? "fenced " : "") + operation.options().type() + " locks" + (operation.options().fenced()
                        ? " (READ locks take no fencing token: readers do not write)." : "."),
                        "Use a lock type the backend supports" + (operation.options().fenced() ? ", or remove fenced = true" : "")
                        + ".", null);
            }
            if (operation != null && operation.options().permits() > 1 && !permitsSupported.getAsBoolean()) {
                throw new DistlockConfigurationException("Invalid @DistributedLock on " + LockOperation.describe(method)
                        + " in bean '" + beanName + "': permits = " + operation.options().permits() + " asks for a "
                        + "semaphore, which the lock backend cannot take.", "Use permits = 1, or the Redis backend.",
                        null);
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
        if (Modifier.isFinal(modifiers)) {
            return "final";
        }
        return null;
    }
}

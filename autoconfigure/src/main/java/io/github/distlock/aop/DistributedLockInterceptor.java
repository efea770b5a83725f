package io.github.distlock.aop;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockResult;
import io.github.distlock.LockTemplate;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * Runs a {@link io.github.distlock.DistributedLock} method through {@link LockTemplate}: the one lock path.
 */
public class DistributedLockInterceptor extends AbstractOperationInterceptor<LockOperation> {

    private static final Log logger = LogFactory.getLog(DistributedLockInterceptor.class);

    private final Supplier<LockTemplate> lockTemplate;

    /**
     * @param operations the parsed annotations
     * @param lockTemplate the template
     * <p>Both are looked up on first use: the advisor is created while bean post-processors are, and must not pull the
     * Redis client or configuration properties into existence that early.
     */
    public DistributedLockInterceptor(Supplier<LockOperationSource> operations, Supplier<LockTemplate> lockTemplate) {
        super(operations);
        this.lockTemplate = lockTemplate;
    }

    @Override
    protected Object execute(LockOperation operation, MethodInvocation invocation, Object target, Class<?> targetClass)
            throws Throwable {
        Object key = operation.evaluateKey(invocation.getArguments(), target, targetClass);
        LockTemplate template = lockTemplate.get();
        return switch (operation.shape()) {
            case SYNC -> sync(operation, key, template, invocation);
            case STAGE -> stage(operation, key, template, invocation);
            case MONO, FLUX -> ReactiveLocking.lock(operation, keys(key), template, invocation);
            case FLOW -> CoroutineLocking.toFlow(ReactiveLocking.lock(operation, keys(key), template, invocation));
        };
    }

    @SuppressWarnings("unchecked")
    private static Collection<String> keys(Object key) {
        return (key instanceof String single) ? List.of(single) : (List<String>) key;
    }

    private static Object sync(LockOperation operation, Object key, LockTemplate template, MethodInvocation invocation)
            throws Throwable {
        if (!operation.handlesNotAcquired()) {
            return (key instanceof String single) ? template.execute(single, operation.options(), invocation::proceed)
                    : template.execute(keys(key), operation.options(), invocation::proceed);
        }
        LockResult<Object> result = (key instanceof String single)
                ? template.tryExecute(single, operation.options(), invocation::proceed)
                : template.tryExecute(keys(key), operation.options(), invocation::proceed);
        if (result.acquired()) {
            return result.value();
        }
        return notAcquired(operation, key, template, invocation);
    }

    private static Object notAcquired(LockOperation operation, Object key, LockTemplate template,
            MethodInvocation invocation) throws Throwable {
        LockAcquisitionException cause = new LockAcquisitionException(
                String.join(", ", keys(key).stream().map(template::fullKey).toList()),
                (operation.options().waitTime() != null) ? operation.options().waitTime() : java.time.Duration.ZERO,
                null);
        return notAcquired(operation, invocation, cause);
    }

    /** Skips or falls back, for a call whose lock could not be had. */
    private static Object notAcquired(LockOperation operation, MethodInvocation invocation,
            LockAcquisitionException cause) throws Throwable {
        if (logger.isDebugEnabled()) {
            logger.debug((operation.fallback() != null ? "Running fallback of " : "Skipped ")
                    + LockOperation.describe(operation.method()) + ": " + cause.getMessage());
        }
        return operation.notAcquired(invocation.getThis(), invocation.getArguments(), cause);
    }

    /**
     * Acquires on the calling thread (as for a plain method: one round trip with a wait of 0), runs the method there,
     * and releases when the stage it returns completes. A lock that can't be had fails the returned stage (or skips,
     * or falls back), so callers handle it where they handle the stage's other failures.
     */
    @SuppressWarnings("unchecked")
    private static Object stage(LockOperation operation, Object key, LockTemplate template, MethodInvocation invocation)
            throws Throwable {
        AtomicBoolean ran = new AtomicBoolean();
        CompletableFuture<Object> result = template.executeAsync(keys(key), operation.options(), () -> {
            ran.set(true);
            try {
                return (CompletionStage<Object>) invocation.proceed();
            }
            catch (RuntimeException | Error ex) {
                throw ex;
            }
            catch (Throwable ex) {
                throw new CompletionException(ex);
            }
        });
        if (!ran.get() && operation.handlesNotAcquired() && result.isCompletedExceptionally()) {
            try {
                result.join();
            }
            catch (CompletionException ex) {
                if (ex.getCause() instanceof LockAcquisitionException notAcquired) {
                    return notAcquired(operation, invocation, notAcquired);
                }
            }
        }
        return result;
    }
}

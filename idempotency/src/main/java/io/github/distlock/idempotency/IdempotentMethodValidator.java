package io.github.distlock.idempotency;

import java.lang.reflect.Method;
import java.util.function.BooleanSupplier;

import io.github.distlock.DistlockConfigurationException;
import io.github.distlock.aop.AbstractMethodValidator;
import io.github.distlock.aop.AbstractOperationSource;
import org.springframework.beans.factory.ObjectProvider;

/**
 * Checks every bean's {@link Idempotent} methods when the bean is created, so that mistakes fail the startup naming
 * the method: an invalid key, fingerprint or duration, a return type that can't be replayed, a method the proxy can't
 * intercept, and no lock backend or mark store to run it on. Parsing here also fills the operation cache. What is
 * common to distlock's annotations is {@link AbstractMethodValidator}'s; here: a lock backend and a mark store must
 * exist.
 */
public class IdempotentMethodValidator extends AbstractMethodValidator<Idempotent, IdempotentOperation> {

    private final BooleanSupplier lockingAvailable;
    private final BooleanSupplier storeAvailable;

    /**
     * @param operations looked up lazily
     * @param lockingAvailable whether a {@link io.github.distlock.LockTemplate} exists (asked without creating it)
     * @param storeAvailable whether an {@link IdempotencyStore} exists (likewise)
     */
    public IdempotentMethodValidator(ObjectProvider<IdempotentOperationSource> operations,
            BooleanSupplier lockingAvailable, BooleanSupplier storeAvailable) {
        super(Idempotent.class, operations, "apply", "use IdempotencyTemplate");
        this.lockingAvailable = lockingAvailable;
        this.storeAvailable = storeAvailable;
    }

    @Override
    protected void checkCanRun(Method method, String beanName) {
        String where = "@Idempotent on " + AbstractOperationSource.describe(method) + " in bean '" + beanName + "'";
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
    }
}

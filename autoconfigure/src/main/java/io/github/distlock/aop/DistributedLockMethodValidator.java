package io.github.distlock.aop;

import java.lang.reflect.Method;
import java.util.List;
import java.util.function.BiPredicate;
import java.util.stream.Collectors;
import java.util.function.BooleanSupplier;

import io.github.distlock.DistlockConfigurationException;
import io.github.distlock.autoconfigure.DistlockBackend;
import io.github.distlock.LockType;

import io.github.distlock.DistributedLock;
import org.springframework.beans.factory.ObjectProvider;

/**
 * Checks every bean's {@link DistributedLock} methods when the bean is created, so that mistakes fail the startup
 * instead of the first call: a key that does not parse or names a parameter the method lacks, negative times, and
 * methods a Spring proxy cannot intercept (private, static or final: their annotation would silently do nothing).
 * Parsing here also fills the operation cache, so the first call does no parsing. What is common to distlock's
 * annotations is {@link AbstractMethodValidator}'s; here: a lock backend must exist, and take the lock's type,
 * fencing and permits.
 */
public class DistributedLockMethodValidator extends AbstractMethodValidator<DistributedLock, LockOperation> {

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
        super(DistributedLock.class, operations, "take a lock", "lock with LockTemplate");
        this.permitsSupported = permitsSupported;
        this.lockingAvailable = lockingAvailable;
        this.supported = supported;
        this.chosenBackend = chosenBackend;
    }

    private final String chosenBackend;

    private final BooleanSupplier permitsSupported;

    @Override
    protected void checkCanRun(Method method, String beanName) {
        if (lockingAvailable.getAsBoolean()) {
            return;
        }
        String on = "@DistributedLock on " + LockOperation.describe(method) + " cannot take a lock: ";
        if (chosenBackend != null && DistlockBackend.FIRST_PARTY.keySet().stream()
                .noneMatch(name -> DistlockBackend.sameName(name, chosenBackend))) {
            // not one of distlock's own names, and no backend of that name registered itself (else locking would be
            // available): a typo, or a third party's backend whose module is missing
            throw new DistlockConfigurationException(on + "distlock.backend=" + chosenBackend
                    + " names no backend distlock has.",
                    "Set distlock.backend to one of " + String.join(", ", DistlockBackend.FIRST_PARTY.keySet())
                    + " (or the name a third party's backend module registers, with that module on the class path), "
                    + "or remove it to use the one backend that is configured.", null);
        }
        if (chosenBackend != null) {
            throw new DistlockConfigurationException(on + "distlock.backend=" + chosenBackend
                    + " chooses a backend that is not configured (no LockProvider bean, so no LockTemplate).",
                    "Give the chosen backend its module and its client: " + DistlockBackend.FIRST_PARTY.entrySet()
                    .stream().map(backend -> backend.getKey() + " needs " + backend.getValue())
                    .collect(Collectors.joining("; ")) + ". Or choose a configured backend with distlock.backend.",
                    null);
        }
        throw new DistlockConfigurationException(on
                + "no lock backend is configured (no LockProvider bean, so no LockTemplate).",
                "Add a backend: " + DistlockBackend.FIRST_PARTY.entrySet().stream()
                .map(backend -> backend.getKey() + " needs " + backend.getValue())
                .collect(Collectors.joining("; ")) + "; or declare a LockProvider bean. Setting distlock.enabled=false "
                + "instead runs every @DistributedLock method WITHOUT a lock.", null);
    }

    @Override
    protected void checkOperation(Method method, String beanName, LockOperation operation) {
        if (!supported.test(operation.options().type(), operation.options().fenced())) {
            throw new DistlockConfigurationException("Invalid @DistributedLock on " + LockOperation.describe(method)
                    + " in bean '" + beanName + "': the lock backend cannot take " + (operation.options().fenced()
                    ? "fenced " : "") + operation.options().type() + " locks" + (operation.options().fenced()
                    ? " (READ locks take no fencing token: readers do not write)." : "."),
                    "Use a lock type the backend supports" + (operation.options().fenced() ? ", or remove fenced = true" : "")
                    + ".", null);
        }
        if (operation.options().permits() > 1 && !permitsSupported.getAsBoolean()) {
            throw new DistlockConfigurationException("Invalid @DistributedLock on " + LockOperation.describe(method)
                    + " in bean '" + beanName + "': permits = " + operation.options().permits() + " asks for a "
                    + "semaphore, which the lock backend cannot take.", "Use permits = 1, or the Redis backend.",
                    null);
        }
    }
}

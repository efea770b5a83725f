package io.github.distlock.aot;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockContext;
import io.github.distlock.aop.LockExpressionRoot;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;

/**
 * What distlock itself reaches by reflection, for a native image: the attributes of {@link DistributedLock} (read
 * through Spring's merged annotations), the SpEL root object of key expressions ({@code #root.method},
 * {@code #root.args}, ...), and the field of the template's per-call record it updates through a {@code VarHandle}.
 * The annotated methods of the application's beans, their fallbacks and the types their keys navigate are
 * registered per bean by {@link DistributedLockBeanRegistrationAotProcessor}.
 */
public class DistlockRuntimeHints implements RuntimeHintsRegistrar {

    @Override
    public void registerHints(RuntimeHints hints, ClassLoader classLoader) {
        hints.reflection().registerType(DistributedLock.class, MemberCategory.INVOKE_PUBLIC_METHODS);
        hints.reflection().registerType(LockExpressionRoot.class, MemberCategory.INVOKE_PUBLIC_METHODS);
        // LockContext.fencingToken() is a static method a key or a method body may call through SpEL: T(...)
        hints.reflection().registerType(LockContext.class, MemberCategory.INVOKE_PUBLIC_METHODS);
        hints.reflection().registerType(TypeReference.of("io.github.distlock.ActiveCall"),
                hint -> hint.withField("ended"));
    }
}

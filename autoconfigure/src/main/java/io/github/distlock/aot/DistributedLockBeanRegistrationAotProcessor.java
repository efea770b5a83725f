package io.github.distlock.aot;

import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;

import io.github.distlock.DistributedLock;
import org.springframework.aot.generate.GenerationContext;
import org.springframework.aot.hint.BindingReflectionHintsRegistrar;
import org.springframework.aot.hint.ExecutableMode;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.ReflectionHints;
import org.springframework.beans.factory.aot.BeanRegistrationAotContribution;
import org.springframework.beans.factory.aot.BeanRegistrationAotProcessor;
import org.springframework.beans.factory.aot.BeanRegistrationCode;
import org.springframework.beans.factory.support.RegisteredBean;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * For each bean with {@link DistributedLock} methods, registers what distlock reaches by reflection at run time, so
 * that the application works in a native image: the annotated methods (read for their annotation and parameter
 * names, and checked at startup), their fallback methods (invoked reflectively), and the types of their parameters
 * (SpEL key expressions call their accessors: {@code #request.productId()}). On the JVM, in AOT mode or not, nothing
 * here is needed; the AOT-processed sample application is tested on the JVM ({@code AotModeIT}).
 */
public class DistributedLockBeanRegistrationAotProcessor implements BeanRegistrationAotProcessor {

    private final BindingReflectionHintsRegistrar bindings = new BindingReflectionHintsRegistrar();

    @Override
    public BeanRegistrationAotContribution processAheadOfTime(RegisteredBean registeredBean) {
        Class<?> beanClass = ClassUtils.getUserClass(registeredBean.getBeanType().toClass());
        List<Method> locked = new ArrayList<>();
        ReflectionUtils.doWithMethods(beanClass, locked::add,
                method -> AnnotatedElementUtils.hasAnnotation(method, DistributedLock.class));
        if (locked.isEmpty()) {
            return null;
        }
        return new Contribution(beanClass, locked);
    }

    private final class Contribution implements BeanRegistrationAotContribution {

        private final Class<?> beanClass;
        private final List<Method> locked;

        Contribution(Class<?> beanClass, List<Method> locked) {
            this.beanClass = beanClass;
            this.locked = locked;
        }

        @Override
        public void applyTo(GenerationContext generationContext, BeanRegistrationCode beanRegistrationCode) {
            ReflectionHints reflection = generationContext.getRuntimeHints().reflection();
            // the startup check walks every method of the bean's class looking for the annotation
            reflection.registerType(beanClass, MemberCategory.INTROSPECT_DECLARED_METHODS,
                    MemberCategory.INTROSPECT_PUBLIC_METHODS);
            for (Method method : locked) {
                reflection.registerMethod(method, ExecutableMode.INVOKE);
                DistributedLock annotation = AnnotatedElementUtils.findMergedAnnotation(method, DistributedLock.class);
                if (annotation != null && !annotation.fallbackMethod().isEmpty()) {
                    ReflectionUtils.doWithMethods(beanClass,
                            fallback -> reflection.registerMethod(fallback, ExecutableMode.INVOKE),
                            fallback -> fallback.getName().equals(annotation.fallbackMethod()));
                }
                for (Type parameter : method.getGenericParameterTypes()) {
                    if (!(parameter instanceof Class<?> type) || !type.isPrimitive()) {
                        bindings.registerReflectionHints(reflection, parameter);
                    }
                }
            }
        }
    }
}

package io.github.distlock.aot;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.aop.LockExpressionRoot;
import org.junit.jupiter.api.Test;
import org.springframework.aot.generate.ClassNameGenerator;
import org.springframework.aot.generate.DefaultGenerationContext;
import org.springframework.aot.generate.InMemoryGeneratedFiles;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.beans.factory.aot.AotServices;
import org.springframework.beans.factory.aot.BeanRegistrationAotContribution;
import org.springframework.beans.factory.aot.BeanRegistrationAotProcessor;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.beans.factory.support.RegisteredBean;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.javapoet.ClassName;

import static org.assertj.core.api.Assertions.assertThat;

/** The hints a native image needs for distlock and for the application's annotated beans. */
class DistlockRuntimeHintsTest {

    @Test
    void distlocksOwnReflectionIsRegisteredAndFoundThroughAotFactories() throws Exception {
        RuntimeHints hints = new RuntimeHints();
        AotServices.factories().load(org.springframework.aot.hint.RuntimeHintsRegistrar.class)
                .forEach(registrar -> registrar.registerHints(hints, getClass().getClassLoader()));
        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(DistributedLock.class, "key")).accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(LockExpressionRoot.class, "getArgs"))
                .accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onFieldAccess("io.github.distlock.ActiveCall", "ended"))
                .accepts(hints);
    }

    @Test
    void annotatedMethodsTheirFallbacksAndTheTypesTheirKeysNavigateAreRegistered() {
        DefaultListableBeanFactory beanFactory = new DefaultListableBeanFactory();
        beanFactory.registerBeanDefinition("orders", new RootBeanDefinition(Orders.class));
        beanFactory.registerBeanDefinition("plain", new RootBeanDefinition(Plain.class));
        BeanRegistrationAotProcessor processor = AotServices.factoriesAndBeans(beanFactory)
                .load(BeanRegistrationAotProcessor.class).stream()
                .filter(DistributedLockBeanRegistrationAotProcessor.class::isInstance).findFirst().orElseThrow();
        assertThat(processor.processAheadOfTime(RegisteredBean.of(beanFactory, "plain"))).isNull();

        BeanRegistrationAotContribution contribution = processor.processAheadOfTime(RegisteredBean.of(beanFactory,
                "orders"));
        DefaultGenerationContext generation = new DefaultGenerationContext(
                new ClassNameGenerator(ClassName.get("com.example", "Test")), new InMemoryGeneratedFiles());
        contribution.applyTo(generation, null);
        RuntimeHints hints = generation.getRuntimeHints();
        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(Orders.class, "place")).accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(Orders.class, "busy")).accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(Request.class, "userId")).accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(Orders.class, "unlocked")).rejects(hints);
    }

    /** A key argument the expression navigates. */
    record Request(long userId, long productId) {
    }

    static class Orders {

        @DistributedLock(key = "'order:' + #request.userId()", fallbackMethod = "busy")
        public String place(Request request) {
            return "placed";
        }

        String busy(Request request, LockAcquisitionException ex) {
            return "busy";
        }

        public String unlocked() {
            return "";
        }
    }

    static class Plain {

        public void nothingLocked() {
        }
    }
}

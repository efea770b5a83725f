package io.github.distlock.test;

import org.springframework.context.ApplicationContext;
import org.springframework.core.Ordered;
import org.springframework.test.context.TestContext;
import org.springframework.test.context.support.AbstractTestExecutionListener;

/**
 * Removes the {@linkplain LockFaults faults} of every {@link InMemoryLockProvider} bean after each test method, so that
 * a fault one test left unused (a failure not consumed, a delay) can't reach the next test that shares the cached
 * application context. Registered through {@code META-INF/spring.factories}; Spring's test framework picks it up by
 * itself. Locks held stay held: {@link LockAssert#assertNoLocksHeld(InMemoryLockProvider)} is the check for those.
 */
public final class ResetLockFaultsTestExecutionListener extends AbstractTestExecutionListener {

    /** Late, after the test's own listeners, as Spring Boot resets its mocks. */
    @Override
    public int getOrder() {
        return Ordered.LOWEST_PRECEDENCE - 100;
    }

    @Override
    public void afterTestMethod(TestContext testContext) {
        if (!testContext.hasApplicationContext()) {
            return;
        }
        ApplicationContext context = testContext.getApplicationContext();
        // no eager initialization: a test that never touched the provider leaves it alone
        context.getBeansOfType(InMemoryLockProvider.class, false, false).values()
                .forEach(InMemoryLockProvider::resetFaults);
    }
}

package io.github.distlock.autoconfigure;

import io.github.distlock.redisson.autoconfigure.DistlockRedissonAutoConfiguration;
import io.github.distlock.DistributedLock;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Mistakes in an annotation fail the application's startup with a message that names the method.
 */
class StartupValidationTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private ApplicationContextRunner runnerWith(Class<?> bean) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class, AopAutoConfiguration.class,
                        DistlockRedissonAutoConfiguration.class, DistlockAutoConfiguration.class))
                .withPropertyValues("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + redis.port())
                .withBean(bean);
    }

    private void assertStartupFails(Class<?> bean, String... messageParts) {
        runnerWith(bean).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).hasStackTraceContaining(messageParts[0]);
            for (String part : messageParts) {
                assertThat(context.getStartupFailure()).hasStackTraceContaining(part);
            }
        });
    }

    @Test
    void validAnnotationsStart() {
        runnerWith(Valid.class).run(context -> assertThat(context).hasNotFailed());
    }

    @Test
    void spelSyntaxError() {
        assertStartupFails(BadSyntax.class, "Invalid @DistributedLock on " + BadSyntax.class.getName() + ".place()",
                "key ''order:' + #userId +' is not a valid SpEL expression");
    }

    @Test
    void unknownParameter() {
        assertStartupFails(UnknownParameter.class, UnknownParameter.class.getName() + ".place()",
                "uses [#userld], which the method does not have; its parameters are [#userId]");
    }

    @Test
    void permitsOutOfRangeOrMixedWithFencingOrAType() {
        assertStartupFails(NoPermits.class, NoPermits.class.getName() + ".place()", "permits must be at least 1, was 0");
        assertStartupFails(FencedPermits.class, FencedPermits.class.getName() + ".place()",
                "permits = 3 (a semaphore) cannot be combined with fenced = true");
        assertStartupFails(FairPermits.class, FairPermits.class.getName() + ".place()",
                "permits = 2 (a semaphore) cannot be combined with type = FAIR");
    }

    @Test
    void negativeTimes() {
        assertStartupFails(NegativeWait.class, NegativeWait.class.getName() + ".place()", "waitTime must be >= 0");
        assertStartupFails(NegativeLease.class, NegativeLease.class.getName() + ".place()", "leaseTime must be >= 0");
    }

    @Test
    void methodsTheProxyCannotIntercept() {
        assertStartupFails(FinalMethod.class, FinalMethod.class.getName() + ".place()", "the method is final");
        assertStartupFails(PrivateMethod.class, PrivateMethod.class.getName() + ".place()", "the method is private");
        assertStartupFails(StaticMethod.class, StaticMethod.class.getName() + ".place()", "the method is static");
    }

    /** A lease below 1 ms would reach Redis as PEXPIRE 0, so the method would run unlocked: refused at startup. */
    @Test
    void subMillisecondTimes() {
        assertStartupFails(SubMillisecondLease.class, SubMillisecondLease.class.getName() + ".place()",
                "leaseTime must be 0 (watchdog) or at least 1 ms, was 500 MICROSECONDS");
        assertStartupFails(SubMillisecondWait.class, SubMillisecondWait.class.getName() + ".place()",
                "waitTime must be 0 or at least 1 ms, was 999 MICROSECONDS");
    }

    /** A time given both as a number and as a string leaves the reader guessing: refused. */
    @Test
    void durationStringMistakes() {
        assertStartupFails(NumberAndString.class, NumberAndString.class.getName() + ".place()",
                "waitTime = 2 and waitTimeString = \"5s\" are both set");
        assertStartupFails(NotADuration.class, NotADuration.class.getName() + ".place()",
                "leaseTimeString = \"ten seconds\" is not a duration");
        assertStartupFails(SubMillisecondString.class, SubMillisecondString.class.getName() + ".place()",
                "leaseTimeString = \"500us\" is below 1 ms");
    }

    /** A key part whose text is an object identity is a new lock on every call: refused at startup. */
    @Test
    void keyPartsWhoseTextIsAnObjectIdentity() {
        assertStartupFails(IdentityParameter.class, IdentityParameter.class.getName() + ".place()",
                "part #cart is a " + Cart.class.getName() + ", whose text is its identity");
        assertStartupFails(IdentityTarget.class, IdentityTarget.class.getName() + ".place()",
                "part #root.target is a " + IdentityTarget.class.getName() + ", whose text is its identity");
    }

    @Test
    void unresolvablePlaceholder() {
        assertStartupFails(MissingPlaceholder.class, MissingPlaceholder.class.getName() + ".place()",
                "Could not resolve placeholder 'no.such.property'");
    }

    static class Valid {
        @DistributedLock(key = "'order:' + #userId", waitTime = 10, leaseTime = 0)
        public void place(String userId) {
        }
    }

    static class BadSyntax {
        @DistributedLock(key = "'order:' + #userId +")
        public void place(String userId) {
        }
    }

    static class UnknownParameter {
        @DistributedLock(key = "'order:' + #userld")
        public void place(String userId) {
        }
    }

    static class NoPermits {
        @DistributedLock(key = "'export:' + #tenant", permits = 0)
        public void place(String tenant) {
        }
    }

    static class FencedPermits {
        @DistributedLock(key = "'export:' + #tenant", permits = 3, fenced = true)
        public void place(String tenant) {
        }
    }

    static class FairPermits {
        @DistributedLock(key = "'export:' + #tenant", permits = 2, type = io.github.distlock.LockType.FAIR)
        public void place(String tenant) {
        }
    }

    static class NegativeWait {
        @DistributedLock(key = "'order:' + #userId", waitTime = -5)
        public void place(String userId) {
        }
    }

    static class NegativeLease {
        @DistributedLock(key = "'order:' + #userId", leaseTime = -2)
        public void place(String userId) {
        }
    }

    static class FinalMethod {
        @DistributedLock(key = "'order:' + #userId")
        public final void place(String userId) {
        }
    }

    static class PrivateMethod {
        @DistributedLock(key = "'order:' + #userId")
        private void place(String userId) {
        }

        public void caller() {
            place("x");
        }
    }

    static class StaticMethod {
        @DistributedLock(key = "'order:' + #userId")
        public static void place(String userId) {
        }
    }

    static class NumberAndString {
        @DistributedLock(key = "'order:' + #userId", waitTime = 2, waitTimeString = "5s")
        public void place(String userId) {
        }
    }

    static class NotADuration {
        @DistributedLock(key = "'order:' + #userId", leaseTimeString = "ten seconds")
        public void place(String userId) {
        }
    }

    static class SubMillisecondString {
        @DistributedLock(key = "'order:' + #userId", leaseTimeString = "500us")
        public void place(String userId) {
        }
    }

    static class SubMillisecondLease {
        @DistributedLock(key = "'order:' + #userId", leaseTime = 500, timeUnit = java.util.concurrent.TimeUnit.MICROSECONDS)
        public void place(String userId) {
        }
    }

    static class SubMillisecondWait {
        @DistributedLock(key = "'order:' + #userId", waitTime = 999, timeUnit = java.util.concurrent.TimeUnit.MICROSECONDS)
        public void place(String userId) {
        }
    }

    /** No toString() of its own, and final: every instance's text is its identity. */
    static final class Cart {
    }

    static class IdentityParameter {
        @DistributedLock(key = "'cart:' + #cart")
        public void place(Cart cart) {
        }
    }

    static class IdentityTarget {
        @DistributedLock(key = "'job:' + #root.target")
        public void place() {
        }
    }

    static class MissingPlaceholder {
        @DistributedLock(key = "'${no.such.property}:' + #userId")
        public void place(String userId) {
        }
    }
}
